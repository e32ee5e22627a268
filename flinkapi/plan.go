package flinkapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"strings"
)

// Plan is a job's dataflow plan (Flink's JobPlanInfo): its job vertices,
// each an operator chain, with their parallelism and the vertices they read
// from. It is what the jar plan (JarPlan) answers for a job that a jar
// would start, and what the job plan (JobPlanDetails) answers for a job
// the cluster runs.
//
// A plan carries no maximum parallelism, no slot sharing group and no
// operator uids, in any Flink version from 1.15 to 2.x. The maximum
// parallelism and the slot sharing group of a running job's vertices are
// in its details (Job: JobVertex.MaxParallelism; the slot sharing group is
// not decoded). A vertex id is derived from the uid (or the generated
// hash) of the first operator of its chain, so a changed uid of that
// operator shows as a changed vertex id.
type Plan struct {
	// JobID is the plan's job id: the running job's, or for a jar plan
	// the id the request gave (else one Flink chose for the plan only).
	// Empty for a job that has no execution graph yet (2.x).
	JobID JobID
	// Name is the job's name, as the program set it.
	Name string
	// Type is STREAMING or BATCH.
	Type string
	// Nodes are the job's vertices, in the order Flink lists them.
	Nodes []PlanNode
}

// Node returns the vertex with the id, if the plan has it.
func (p *Plan) Node(id string) (PlanNode, bool) {
	if p == nil {
		return PlanNode{}, false
	}
	for _, n := range p.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return PlanNode{}, false
}

// PlanNode is one vertex of a job's plan and the vertices it reads from.
type PlanNode struct {
	// ID is the job vertex id (32 hexadecimal digits).
	ID string
	// Parallelism is the vertex's parallelism as the plan shows it: for a
	// jar plan, the parallelism the program or the request set, else the
	// cluster's parallelism.default; for a running job under the adaptive
	// scheduler (2.x) the parallelism it currently runs with.
	Parallelism int
	// Inputs are the ids of the vertices it reads from; none for a
	// source.
	Inputs []string
	// Operator and OperatorStrategy are Flink's "operator" and
	// "operator_strategy"; both are empty for a streaming job.
	Operator         string
	OperatorStrategy string
	// Description is Flink's "description": the chain's operator names,
	// HTML-escaped, one per line, each line ending in "<br/>" (for
	// example "counter<br/>+- discard: Writer<br/>"). Name gives it as
	// plain text.
	Description string
	// InputEdges describe the inputs in the order of Inputs.
	InputEdges []PlanInput
}

// PlanInput is one input of a plan vertex.
type PlanInput struct {
	ID           string // the id of the vertex it reads from
	Num          int    // the input's number at the reading vertex
	ShipStrategy string // how records are distributed: HASH, FORWARD, REBALANCE, ...
	Exchange     string // pipelined_bounded, blocking, ...
}

// Name returns the vertex's description as plain text, the operators of
// its chain joined by " -> " ("counter -> discard: Writer"), as the job
// details name the vertex.
func (n PlanNode) Name() string {
	d := strings.ReplaceAll(n.Description, "<br/>", "\n")
	var parts []string
	for _, line := range strings.Split(d, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimPrefix(line, "+-"))
		if line != "" {
			parts = append(parts, html.UnescapeString(line))
		}
	}
	return strings.Join(parts, " -> ")
}

// planWire is JobPlanInfo: {"plan": {...}}. Up to 2.0 Flink's "plan" is a
// RawJson written as the JSON object itself; since 2.1 it is a typed Plan
// with the same fields. Both decode here; a plan sent as a JSON string
// holding the object is accepted too.
type planWire struct {
	Plan json.RawMessage `json:"plan"`
}

type planBodyWire struct {
	JobID string         `json:"jid"`
	Name  string         `json:"name"`
	Type  string         `json:"type"`
	Nodes []planNodeWire `json:"nodes"`
}

type planNodeWire struct {
	ID               string          `json:"id"`
	Parallelism      int             `json:"parallelism"`
	Operator         string          `json:"operator"`
	OperatorStrategy string          `json:"operator_strategy"`
	Description      string          `json:"description"`
	Inputs           []planInputWire `json:"inputs"`
}

type planInputWire struct {
	Num          int    `json:"num"`
	ID           string `json:"id"`
	ShipStrategy string `json:"ship_strategy"`
	Exchange     string `json:"exchange"`
}

// errNoPlan: the answer had no "plan" object.
var errNoPlan = errors.New(`no "plan" object`)

// convert decodes the plan object; an answer without one is an error.
func (w *planWire) convert() (*Plan, error) {
	raw := bytes.TrimSpace(w.Plan)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		raw = bytes.TrimSpace([]byte(s))
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errNoPlan
	}
	var b planBodyWire
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, err
	}
	p := &Plan{JobID: JobID(b.JobID), Name: b.Name, Type: b.Type, Nodes: make([]PlanNode, len(b.Nodes))}
	for i := range b.Nodes {
		n := &b.Nodes[i]
		if n.ID == "" {
			return nil, fmt.Errorf("plan node %d has no id", i)
		}
		out := PlanNode{ID: n.ID, Parallelism: n.Parallelism, Operator: n.Operator, OperatorStrategy: n.OperatorStrategy, Description: n.Description}
		for _, in := range n.Inputs {
			out.Inputs = append(out.Inputs, in.ID)
			out.InputEdges = append(out.InputEdges, PlanInput{ID: in.ID, Num: in.Num, ShipStrategy: in.ShipStrategy, Exchange: in.Exchange})
		}
		p.Nodes[i] = out
	}
	return p, nil
}

// JobPlan returns the vertices of a job's plan with their inputs: the
// graph along which records flow, as Flink lists them; none for a job
// that has no execution graph yet. JobPlanDetails returns the whole plan.
//
// Flink REST: GET /jobs/:jobid/plan (1.0+)
func (c *Client) JobPlan(ctx context.Context, job JobID) ([]PlanNode, error) {
	path, err := jobPath(job, "/plan")
	if err != nil {
		return nil, err
	}
	var w planWire
	if err := c.get(ctx, path, nil, &w); err != nil {
		return nil, err
	}
	p, err := w.convert()
	if errors.Is(err, errNoPlan) {
		return nil, nil // a job without an execution graph yet
	}
	if err != nil {
		return nil, c.decodeError(http.MethodGet, path, err)
	}
	return p.Nodes, nil
}

// JobPlanDetails returns the plan of a job the cluster knows: its name,
// type and vertices. A job the JobManager does not know answers an error
// for which IsJobNotFound is true.
//
// Flink REST: GET /jobs/:jobid/plan (1.0+)
func (c *Client) JobPlanDetails(ctx context.Context, job JobID) (*Plan, error) {
	path, err := jobPath(job, "/plan")
	if err != nil {
		return nil, err
	}
	var w planWire
	if err := c.get(ctx, path, nil, &w); err != nil {
		return nil, err
	}
	p, err := w.convert()
	if err != nil {
		return nil, c.decodeError(http.MethodGet, path, err)
	}
	return p, nil
}

// JarPlanRequest describes the job whose plan a jar would give: the fields
// that a jar run and a jar plan share (Flink's JarRequestBody), checked and
// gated by the cluster's version as for RunJar.
type JarPlanRequest struct {
	// EntryClass overrides the jar manifest's main class.
	EntryClass string
	// ProgramArgs are the program's arguments, one per element.
	ProgramArgs []string
	// Parallelism overrides the default parallelism; 0 keeps it. At most
	// 32768, Flink's limit.
	Parallelism int
	// JobID is the job id the plan is made for; empty lets Flink choose.
	// No job is started under it.
	JobID JobID
	// FlinkConfiguration holds job configuration entries (1.17+).
	FlinkConfiguration map[string]string
	// Secrets are values the request carries that are never reported, as
	// for RunJarRequest.Secrets.
	Secrets []string
}

// PlanRequest returns the part of a jar run request that decides the job's
// plan: everything but the snapshot to restore from and its claim mode,
// which Flink's jar plan does not take.
func (r RunJarRequest) PlanRequest() JarPlanRequest {
	return JarPlanRequest{
		EntryClass: r.EntryClass, ProgramArgs: r.ProgramArgs, Parallelism: r.Parallelism,
		JobID: r.JobID, FlinkConfiguration: r.FlinkConfiguration, Secrets: r.Secrets,
	}
}

// jarPlanWire is Flink's JarPlanRequestBody as the client sends it.
type jarPlanWire struct {
	EntryClass         string            `json:"entryClass,omitempty"`
	ProgramArgsList    []string          `json:"programArgsList,omitempty"`
	Parallelism        int               `json:"parallelism,omitempty"`
	JobID              JobID             `json:"jobId,omitempty"`
	FlinkConfiguration map[string]string `json:"flinkConfiguration,omitempty"`
}

// buildJarPlan validates req against the cluster's version, as
// buildRunJar does for the same fields, and returns the body to send.
func buildJarPlan(v Version, req JarPlanRequest) (*jarPlanWire, error) {
	run, err := buildRunJar(v, RunJarRequest{
		EntryClass: req.EntryClass, ProgramArgs: req.ProgramArgs, Parallelism: req.Parallelism,
		JobID: req.JobID, FlinkConfiguration: req.FlinkConfiguration,
	})
	if err != nil {
		return nil, err
	}
	return &jarPlanWire{
		EntryClass: run.EntryClass, ProgramArgsList: run.ProgramArgsList, Parallelism: run.Parallelism,
		JobID: run.JobID, FlinkConfiguration: run.FlinkConfiguration,
	}, nil
}

// JarPlan returns the plan of the job an uploaded jar would start with
// req, without starting it: Flink runs the program's main method up to
// the job's submission and answers the job graph it built. Nothing on the
// cluster changes, so the call is retried like a GET.
//
// A jar the cluster does not have answers an error for which
// IsJarNotFound is true; a program that fails while it builds its job
// (its main method throws, an argument is wrong, the entry class is
// missing) one for which IsProgramError is true.
//
// Flink REST: POST /jars/:jarid/plan (1.5+; flinkConfiguration 1.17+)
func (c *Client) JarPlan(ctx context.Context, jar JarID, req JarPlanRequest) (*Plan, error) {
	if err := jar.Validate(); err != nil {
		return nil, err
	}
	v, err := c.Version(ctx)
	if err != nil {
		return nil, err
	}
	body, err := buildJarPlan(v, req)
	if err != nil {
		return nil, err
	}
	var w planWire
	p := "/jars/" + string(jar) + "/plan"
	if _, err := c.do(ctx, call{method: http.MethodPost, path: p, body: body, retry: true, secrets: req.Secrets}, &w); err != nil {
		return nil, err
	}
	plan, err := w.convert()
	if err != nil {
		return nil, c.decodeError(http.MethodPost, p, err)
	}
	return plan, nil
}
