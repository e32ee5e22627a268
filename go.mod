module github.com/flinkkit/flinkkit

go 1.25

require (
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/go-resty/resty/v2 v2.17.2
	github.com/google/go-cmp v0.7.0
	github.com/jarcoal/httpmock v1.4.2
	gopkg.in/yaml.v3 v3.0.1
)

require golang.org/x/net v0.43.0 // indirect
