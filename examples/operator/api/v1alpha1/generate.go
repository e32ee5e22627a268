package v1alpha1

// Deep copies (zz_generated.deepcopy.go) and the CRD (config/crd) are
// generated from the types and their markers:
//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 object crd paths=. output:crd:artifacts:config=../../config/crd
