// Package reqlog reads the request log of the fake JobManager
// (flinktest.Server.Requests) for the suites that check what an
// operation sent: without the transport's replays (WithoutReplays), and
// with the fields of the request bodies they look at (BodyOf).
package reqlog
