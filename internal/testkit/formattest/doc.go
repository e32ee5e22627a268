// Package formattest holds flinkkit's stored types to what earlier
// releases wrote. Each package with stored types keeps golden fixtures in
// testdata/golden: one file per stored type and format version, written
// once by the release that introduced the version and never edited
// afterwards (the way Kubernetes keeps its API compatibility fixtures).
// Check decodes every fixture and compares it with the value it holds,
// checks that the newest one is what this release writes, byte for byte,
// with every field set, and that a value of a newer, unknown version is
// refused:
//
//	formattest.Check(t, formattest.Type[savepoint.History]{
//		Name: "savepoint.History", Dir: "testdata/golden", Newest: savepoint.FormatVersion,
//		ErrUnknown: savepoint.ErrUnknownFormat, Update: *update,
//		Fixtures: []formattest.Fixture[savepoint.History]{
//			{File: "history-legacy.json", Want: legacy},
//			{File: "history-v1.json", Version: 1, Want: v1},
//		},
//	})
//
// Package formattest is test harness (internal/testkit): only tests and other
// harness packages import it, never the library or the examples' programs.
package formattest
