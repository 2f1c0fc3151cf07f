package server

// NewHTTPHandler is newHTTPHandler, for the tests of package server_test.
var NewHTTPHandler = newHTTPHandler
