package server

// Unexported parts of ApplyConfig, for the table tests of package
// server_test.
var (
	ParseISODuration = parseISODuration
	StripJSONC       = stripJSONC
)
