package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunBadFlags: wrong flags end with an error naming the flag, before
// anything connects to Kubernetes or Flink.
func TestRunBadFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file+"-bad", []byte("s3.endpoint: http://127.0.0.1:1\ns3.path.style.access: perhaps\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--flink-qps", "0"}, "--flink-qps"},
		{[]string{"--flink-url", "localhost:8081"}, "--flink-url"},
		{[]string{"--flink-url", "http://user:secret@localhost:8081"}, "--flink-url"},
		{[]string{"--flink-url", "http://localhost:8081", "--restore-points", filepath.Join(file, "sub")}, "--restore-points"},
		{[]string{"--flink-url", "http://localhost:8081", "--restore-points-configmap", "Not_A_Name"}, "--restore-points-configmap"},
		{[]string{"--flink-url", "http://localhost:8081", "--max-concurrent-reconciles", "0"}, "--max-concurrent-reconciles"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--jar-root", filepath.Join(file, "sub")}, "--jar-root"},
		{[]string{"--jar-root", file}, "--jar-root"},
		{[]string{"--jar-root", "", "--storage-flink-config", filepath.Join(file, "absent.yaml")}, "--storage-flink-config"},
		{[]string{"--jar-root", "", "--storage-flink-config", file + "-bad"}, "--storage-flink-config"},
	} {
		err := run(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error naming %q", tc.args, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("run(%q): the error shows the password: %v", tc.args, err)
		}
	}
}
