package lifecycle

import (
	"github.com/flinkkit/flinkkit/flinkapi"
)

// keepStableJar records in st the upload of the stable template's
// build: the jar uploaded from st.Stable's file while it held that build
// (st.JarID, uploaded with the digest st.Stable names). A rollback runs
// it (Controller.jarID) whatever the file holds since, and housekeeping
// keeps it (Claim). A stable template of another build, or none, clears
// it, except while an action in flight deploys that build: it runs it
// (a rollback started before its job's successor became stable).
func keepStableJar(st *JobStatus) {
	s := &st.Stable
	switch {
	case st.InFlight() && st.StableJarID != "" && st.Target.JarDigest == st.StableJarDigest:
	case s.JarID != "" || s.JarFile == "" || s.JarDigest == "":
		st.StableJarID, st.StableJarDigest = "", ""
	case st.JarID != "" && st.JarFile == s.JarFile && st.JarDigest == s.JarDigest:
		st.StableJarID, st.StableJarDigest = st.JarID, st.JarDigest
	case st.StableJarDigest != s.JarDigest:
		st.StableJarID, st.StableJarDigest = "", ""
	}
}

// stableJar is the upload of t's build recorded as the stable
// template's (keepStableJar), if t is of that build; empty otherwise.
func stableJar(t JobTemplate, st *JobStatus) flinkapi.JarID {
	if st.StableJarID == "" || t.JarFile == "" || t.JarFile != st.Stable.JarFile || t.JarDigest == "" || t.JarDigest != st.StableJarDigest {
		return ""
	}
	return st.StableJarID
}
