// Package e2e holds minibus's wire-level tests against real AMQP 1.0
// clients. It is a module of its own so that the root module stays free of
// their dependencies (go-amqp here). Its tests play a server built on
// minibus's own codec (internal/amqp) and drive unmodified clients against
// it over loopback TCP, every wait bounded by a deadline.
package e2e
