module github.com/flinkkit/flinkkit/examples/flinkctl

go 1.26.0

replace github.com/flinkkit/flinkkit => ../..

require (
	github.com/flinkkit/flinkkit v0.0.0-00010101000000-000000000000
	github.com/spf13/cobra v1.10.2
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/go-resty/resty/v2 v2.17.2 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/net v0.43.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
