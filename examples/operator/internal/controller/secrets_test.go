package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// jobSecrets reads a key of a labelled Secret of the FlinkJob's own
// namespace, and nothing else; its errors say what is wrong without a
// value.
func TestJobSecrets(t *testing.T) {
	ctx := context.Background()
	k := newFakeClient(t)
	labelled := map[string]string{LabelSecret: "true"}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "db", Labels: labelled}, Data: map[string][]byte{"password": []byte("pw-a")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "plain"}, Data: map[string][]byte{"password": []byte("pw-plain")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db", Labels: labelled}, Data: map[string][]byte{"password": []byte("pw-b")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "only-b", Labels: labelled}, Data: map[string][]byte{"password": []byte("pw-only-b")}},
	} {
		if err := k.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	s := jobSecrets{reader: k, namespace: "team-a"}
	if v, err := s.Secret(ctx, "db/password"); v != "pw-a" || err != nil {
		t.Errorf(`Secret("db/password") = %q, %v; want team-a's value`, v, err)
	}
	for name, want := range map[string]string{
		"password":           `"password": want SECRET/KEY, the key KEY of the Secret SECRET in the FlinkJob's namespace team-a`,
		"db/":                "want SECRET/KEY",
		"team-b/db/password": "want SECRET/KEY",
		"only-b/password":    "no Secret team-a/only-b labelled flinkkit.dev/secret=true",
		"plain/password":     "no Secret team-a/plain labelled flinkkit.dev/secret=true",
		"gone/password":      "no Secret team-a/gone labelled flinkkit.dev/secret=true",
		"db/user":            `the Secret team-a/db has no key "user"`,
	} {
		v, err := s.Secret(ctx, name)
		if err == nil || v != "" || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "pw-") {
			t.Errorf("Secret(%q) = %q, %v; want an error with %q and no value", name, v, err, want)
		}
	}
}
