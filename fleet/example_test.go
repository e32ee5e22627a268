package fleet_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/flinkkit/flinkkit/fleet"
)

// A spec file with a misspelt field and a value of the wrong kind: the
// error names the file, the line and the field as the file writes them.
func ExampleDecodeSpec() {
	_, err := fleet.DecodeSpec("jobs/orders.yaml", []byte(`job:
  jarFile: /jobs/orders.jar
  paralelism: 4
update:
  mode: Savepoint
  savepointAttempts: two
`))
	fmt.Println(err)

	spec, err := fleet.DecodeSpec("jobs/orders.yaml", []byte(`job:
  jarFile: /jobs/orders.jar
  parallelism: 4
  flinkConfiguration:
    pipeline.object-reuse: true
update:
  mode: Savepoint
  maxStateAge: 1h
`))
	fmt.Println(spec.Job.Parallelism, spec.Job.FlinkConfiguration["pipeline.object-reuse"], spec.Update.MaxStateAge, err)
	// Output:
	// jobs/orders.yaml:3: job.paralelism: unknown field (did you mean "parallelism"?)
	// jobs/orders.yaml:6: update.savepointAttempts: want a whole number, got "two"
	// 4 true 1h0m0s <nil>
}

// A deployment's record is saved whole: its spec, the spec it was
// applied under and the Controller's status. List reads every record
// without waiting for a writer.
func ExampleDirStore() {
	dir, err := os.MkdirTemp("", "fleet")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := fleet.NewDirStore(dir)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	spec, err := fleet.DecodeSpec("orders.yaml", []byte("job: {jarFile: /jobs/orders.jar, parallelism: 2}\n"))
	if err != nil {
		log.Fatal(err)
	}
	rec := fleet.Record{Name: "orders", Spec: spec}
	// ... Controller.Reconcile(ctx, rec.Spec, &rec.Status) ...
	rec.Applied = &spec
	if err := store.Save(ctx, &rec); err != nil {
		log.Fatal(err)
	}

	// The spec is gone from its source: the record keeps what Delete
	// needs.
	rec.Removed = true
	if err := store.Save(ctx, &rec); err != nil {
		log.Fatal(err)
	}
	all, err := store.List(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range all {
		fmt.Println(r.Name, r.Removed, r.Applied.Job.JarFile)
	}
	if _, _, err := store.Load(ctx, "../orders"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// orders true /jobs/orders.jar
	// fleet: deployment name "../orders" is not a safe file name: use 1 to 253 bytes of segments separated by '/', each of letters, digits, '.', '_' and '-' starting with a letter or digit
}
