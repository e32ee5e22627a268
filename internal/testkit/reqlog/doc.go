// Package reqlog reads the request log of the fake JobManager
// (flinktest.Server.Requests) for the suites that check what an
// operation sent: without the transport's replays (WithoutReplays), and
// with the fields of the request bodies they look at (BodyOf), and
// the jar uploads among them (JarUploads).
//
// Package reqlog is test harness (internal/testkit): only tests and other
// harness packages import it, never the library or the examples' programs.
package reqlog
