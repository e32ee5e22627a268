// Package plaincheck keeps hand-written deep copies honest. Types that are
// embedded in Kubernetes objects (savepoint records, policies, lifecycle
// progress) hold time.Time, which controller-gen cannot deep-copy, so their
// DeepCopyInto methods are written by hand as plain struct copies. Such a
// copy is deep only while every field is a value, a string or a time.Time;
// Problems lists the fields for which that is no longer true, so a test
// fails as soon as someone adds one.
//
// Package plaincheck is test harness (internal/testkit): only tests and other
// harness packages import it, never the library or the examples' programs.
package plaincheck
