module github.com/minibus-go/minibus/e2e

go 1.25.0

replace github.com/minibus-go/minibus => ../

require (
	github.com/Azure/go-amqp v1.7.0
	github.com/minibus-go/minibus v0.0.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
