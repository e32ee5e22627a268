package fleet

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteMetrics writes the Runner's metrics to w in the Prometheus text
// format (version 0.0.4), for a /metrics endpoint:
//
//   - flinkkit_fleet_deployments{cluster,verdict}: the deployments by the
//     verdict of their last call ("" before the first), a gauge;
//   - flinkkit_fleet_deployments_failing{cluster}: those whose last call
//     failed, a gauge;
//   - flinkkit_fleet_calls_total{cluster} and
//     flinkkit_fleet_call_errors_total{cluster}: the Controllers' calls and
//     those that failed, counters;
//   - flinkkit_fleet_overview_reads_total{cluster}: the reads of the
//     cluster's shared overview, a counter;
//   - flinkkit_fleet_unclaimed_jobs{cluster}: the jobs no deployment
//     claims as the last housekeeping found them (ClusterResult), a
//     gauge;
//   - flinkkit_fleet_jars{cluster}: the Runner's uploads the cluster held
//     after the last housekeeping, a gauge;
//   - flinkkit_fleet_jar_uploads_total{cluster} and
//     flinkkit_fleet_jars_deleted_total{cluster}: the jars the Runner
//     uploaded and those its housekeeping deleted, counters.
func (r *Runner) WriteMetrics(w io.Writer) error {
	type key struct{ cluster, verdict string }
	byVerdict := map[key]int{}
	failing := map[string]int{}
	r.mu.Lock()
	clusters := map[string]bool{}
	for name := range r.Clusters {
		clusters[name] = true
	}
	for _, d := range r.deps {
		res := d.result
		if res.Deleted {
			continue
		}
		byVerdict[key{res.Cluster, string(res.Verdict)}]++
		if res.Err != nil {
			failing[res.Cluster]++
		}
	}
	calls := map[string]clusterMetrics{}
	for name, m := range r.metrics {
		calls[name] = *m
	}
	reads := map[string]int64{}
	for name, s := range r.shared {
		reads[name] = s.Reads()
	}
	jars := map[string]clusterJars{}
	for name, j := range r.jars {
		jars[name] = clusterJars{result: j.result, uploads: j.uploads, deleted: j.deleted}
	}
	r.mu.Unlock()

	names := make([]string, 0, len(clusters))
	for n := range clusters {
		names = append(names, n)
	}
	sort.Strings(names)
	keys := make([]key, 0, len(byVerdict))
	for k := range byVerdict {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].cluster != keys[j].cluster {
			return keys[i].cluster < keys[j].cluster
		}
		return keys[i].verdict < keys[j].verdict
	})

	var b strings.Builder
	family := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	family("flinkkit_fleet_deployments", "gauge", "Deployments by cluster and the verdict of their last call.")
	for _, k := range keys {
		fmt.Fprintf(&b, "flinkkit_fleet_deployments{cluster=%s,verdict=%s} %d\n", quote(k.cluster), quote(k.verdict), byVerdict[k])
	}
	family("flinkkit_fleet_deployments_failing", "gauge", "Deployments whose last call failed, by cluster.")
	for _, n := range names {
		fmt.Fprintf(&b, "flinkkit_fleet_deployments_failing{cluster=%s} %d\n", quote(n), failing[n])
	}
	family("flinkkit_fleet_calls_total", "counter", "Calls of the deployments' Controllers, by cluster.")
	for _, n := range names {
		fmt.Fprintf(&b, "flinkkit_fleet_calls_total{cluster=%s} %d\n", quote(n), calls[n].calls)
	}
	family("flinkkit_fleet_call_errors_total", "counter", "Calls of the deployments' Controllers that failed, by cluster.")
	for _, n := range names {
		fmt.Fprintf(&b, "flinkkit_fleet_call_errors_total{cluster=%s} %d\n", quote(n), calls[n].errors)
	}
	family("flinkkit_fleet_overview_reads_total", "counter", "Reads of each cluster's shared job overview.")
	for _, n := range names {
		fmt.Fprintf(&b, "flinkkit_fleet_overview_reads_total{cluster=%s} %d\n", quote(n), reads[n])
	}
	family("flinkkit_fleet_unclaimed_jobs", "gauge", "Jobs of each cluster that no deployment claims, as the last housekeeping found them.")
	for _, n := range names {
		fmt.Fprintf(&b, "flinkkit_fleet_unclaimed_jobs{cluster=%s} %d\n", quote(n), len(jars[n].result.Unclaimed))
	}
	family("flinkkit_fleet_jars", "gauge", "Jars the runner uploaded that each cluster held after the last housekeeping.")
	for _, n := range names {
		fmt.Fprintf(&b, "flinkkit_fleet_jars{cluster=%s} %d\n", quote(n), jars[n].result.Jars)
	}
	family("flinkkit_fleet_jar_uploads_total", "counter", "Jars the runner uploaded to each cluster.")
	for _, n := range names {
		fmt.Fprintf(&b, "flinkkit_fleet_jar_uploads_total{cluster=%s} %d\n", quote(n), jars[n].uploads)
	}
	family("flinkkit_fleet_jars_deleted_total", "counter", "Unused jars the runner's housekeeping deleted from each cluster.")
	for _, n := range names {
		fmt.Fprintf(&b, "flinkkit_fleet_jars_deleted_total{cluster=%s} %d\n", quote(n), jars[n].deleted)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// quote is a label value in the text format: backslash, double quote and
// newline escaped.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
