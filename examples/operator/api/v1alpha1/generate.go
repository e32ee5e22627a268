package v1alpha1

// Deep copies (zz_generated.deepcopy.go) and the CRD (config/crd) are
// generated from the types and their markers by controller-gen's object
// and crd generators, run by tools/controller-gen (which describes the
// time.Time fields of flinkkit's types as date-time strings; the version
// set here is the one its go.mod requires, written into the CRD):
//go:generate go run -C ../../tools/controller-gen -ldflags=-X=sigs.k8s.io/controller-tools/pkg/version.version=v0.23.0 . ../../api/v1alpha1
