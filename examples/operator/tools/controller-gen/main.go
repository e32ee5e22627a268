// Command controller-gen runs controller-gen's object and crd generators
// (sigs.k8s.io/controller-tools, the version in go.mod) on one package of
// API types, with one difference: a time.Time field is a date-time
// string in the CRD whether or not it carries markers saying so.
// flinkkit's lifecycle.JobStatus, which the FlinkJob's status embeds,
// holds time.Time fields without them (policy.HealthHistory's), on which
// the stock controller-gen fails.
//
//	go run -C tools/controller-gen . DIR
//
// generates DIR's zz_generated.deepcopy.go and its CRDs in DIR/../../config/crd.
package main

import (
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-tools/pkg/crd"
	"sigs.k8s.io/controller-tools/pkg/deepcopy"
	"sigs.k8s.io/controller-tools/pkg/genall"
	"sigs.k8s.io/controller-tools/pkg/loader"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: controller-gen DIR")
		os.Exit(2)
	}
	if err := os.Chdir(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "controller-gen:", err)
		os.Exit(2)
	}
	crd.KnownPackages["time"] = func(p *crd.Parser, pkg *loader.Package) {
		p.Schemata[crd.TypeIdent{Name: "Time", Package: pkg}] = apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time"}
		p.AddPackage(pkg)
	}
	object, crds := genall.Generator(deepcopy.Generator{}), genall.Generator(crd.Generator{})
	rt, err := genall.Generators{&object, &crds}.ForRoots(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller-gen:", err)
		os.Exit(1)
	}
	rt.OutputRules = genall.OutputRules{Default: genall.OutputArtifacts{Config: genall.OutputToDirectory("../../config/crd")}}
	if rt.Run() {
		fmt.Fprintln(os.Stderr, "controller-gen: not all generators ran successfully")
		os.Exit(1)
	}
}
