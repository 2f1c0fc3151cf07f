module github.com/minibus-go/minibus/tests

go 1.25.0

replace github.com/minibus-go/minibus => ../

require (
	github.com/benbjohnson/clock v1.3.5
	github.com/minibus-go/minibus v0.0.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/google/btree v1.1.3 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
