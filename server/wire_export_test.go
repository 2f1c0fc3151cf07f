package server

// WithFlowLimits makes o grant a sending peer the given link credit and
// session window instead of the defaults, for the tests of package
// server_test that send beyond them (the defaults are topped up as the
// peer's transfers are read, so a peer never reaches them).
func WithFlowLimits(o *Options, credit, window uint32) *Options {
	o.flow = &flowLimits{credit: credit, window: window}
	return o
}
