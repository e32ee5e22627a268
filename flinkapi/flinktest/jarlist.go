package flinktest

import "github.com/flinkkit/flinkkit/flinkapi"

// JarIDs returns the ids of the jars uploaded and not deleted, oldest
// first: a test that rewrites a jar file tells the uploads of its old
// content from those of its new one by the ids known before the rewrite.
func (s *Server) JarIDs() []flinkapi.JarID {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]flinkapi.JarID, len(s.jars))
	for i, j := range s.jars {
		out[i] = j.id
	}
	return out
}
