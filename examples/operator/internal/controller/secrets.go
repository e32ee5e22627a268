package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// jobSecrets gives the values of the secrets a FlinkJob's arguments name
// (${secret:SECRET/KEY}, lifecycle.Secrets): the key KEY of the Secret
// SECRET in the FlinkJob's own namespace, which must carry the label
// LabelSecret "true". It reads through the reconciler's client, whose
// cache holds only such Secrets; one read through another client is held
// to the label all the same. Its errors name the Secret and the key,
// never a value.
type jobSecrets struct {
	reader    client.Reader
	namespace string
}

// Secret returns the value of the key of the Secret that name, SECRET/KEY,
// gives.
func (s jobSecrets) Secret(ctx context.Context, name string) (string, error) {
	secret, key, ok := strings.Cut(name, "/")
	if !ok || secret == "" || key == "" || strings.Contains(key, "/") {
		return "", fmt.Errorf("%q: want SECRET/KEY, the key KEY of the Secret SECRET in the FlinkJob's namespace %s", name, s.namespace)
	}
	var sec corev1.Secret
	err := s.reader.Get(ctx, types.NamespacedName{Namespace: s.namespace, Name: secret}, &sec)
	if apierrors.IsNotFound(err) || err == nil && sec.Labels[LabelSecret] != "true" {
		return "", fmt.Errorf("no Secret %s/%s labelled %s=true (the operator reads only Secrets with that label)", s.namespace, secret, LabelSecret)
	}
	if err != nil {
		return "", fmt.Errorf("reading the Secret %s/%s: %w", s.namespace, secret, err)
	}
	v, ok := sec.Data[key]
	if !ok {
		return "", fmt.Errorf("the Secret %s/%s has no key %q", s.namespace, secret, key)
	}
	return string(v), nil
}
