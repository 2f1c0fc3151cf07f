package amqp

import "math"

// Attach attaches a link to a session (section 2.7.3). Encoding always
// writes all fourteen fields.
type Attach struct {
	Name   string // mandatory
	Handle uint32 // mandatory
	Role   Role   // mandatory
	// SndSettleMode decodes to SndMixed when absent; it is always encoded.
	SndSettleMode SndSettleMode
	// RcvSettleMode decodes to RcvFirst when absent; it is always encoded.
	RcvSettleMode        RcvSettleMode
	Source               *Source // nil is a null terminus
	Target               *Target // nil is a null terminus
	Unsettled            Map     // delivery tag to delivery state; nil is absent
	IncompleteUnsettled  bool
	InitialDeliveryCount *uint32 // nil is absent (a receiver's attach)
	// MaxMessageSize is in octets; 0 is absent (no limit).
	MaxMessageSize                           uint64
	OfferedCapabilities, DesiredCapabilities []Symbol
	Properties                               Map
}

// Source is the source terminus of a link (part 3, section 3.5.3).
// Encoding always writes all eleven fields.
type Source struct {
	Address string // "" is absent
	// Durable is the terminus-durability: 0 none (default), 1
	// configuration, 2 unsettled-state.
	Durable uint32
	// ExpiryPolicy is "" when absent, which the specification reads as
	// "session-end".
	ExpiryPolicy          Symbol
	Timeout               uint32 // seconds
	Dynamic               bool
	DynamicNodeProperties Map
	DistributionMode      Symbol
	// Filter is the filter-set: symbol keys, values kept exactly as
	// decoded, a [Described] or a plain value (clients differ on the
	// session filter: some send a plain string, others a described one),
	// and encoded exactly as held.
	Filter         Map
	DefaultOutcome any // an outcome (*Accepted ...) or a Described; nil is absent
	Outcomes       []Symbol
	Capabilities   []Symbol
}

// Target is the target terminus of a link (part 3, section 3.5.4), or,
// when Coordinator is set, a transaction coordinator (part 4, descriptor
// 0x30), of which only Capabilities is carried. Encoding a target always
// writes all seven fields.
type Target struct {
	Address               string
	Durable               uint32
	ExpiryPolicy          Symbol
	Timeout               uint32
	Dynamic               bool
	DynamicNodeProperties Map
	Capabilities          []Symbol
	// Coordinator marks a transaction coordinator target.
	Coordinator bool
}

// Flow updates a session's and optionally a link's flow state (section
// 2.7.4). Trailing absent fields are not encoded.
type Flow struct {
	NextIncomingID *uint32
	IncomingWindow uint32 // mandatory
	NextOutgoingID uint32 // mandatory
	OutgoingWindow uint32 // mandatory
	Handle         *uint32
	DeliveryCount  *uint32
	LinkCredit     *uint32
	Available      *uint32
	Drain, Echo    bool
	Properties     Map
}

// Transfer carries (part of) a message on a link (section 2.7.5). Trailing
// absent fields are not encoded.
type Transfer struct {
	Handle        uint32  // mandatory
	DeliveryID    *uint32 // absent on continuation frames
	DeliveryTag   []byte  // nil is absent; at most 32 octets by the specification
	MessageFormat *uint32
	Settled       *bool
	More          bool
	RcvSettleMode *RcvSettleMode
	State         DeliveryState
	Resume        bool
	Aborted       bool
	Batchable     bool
	// Payload is the frame's payload after the performative: the encoded
	// message, or this frame's part of it. It is not a field of the list.
	// Decoded, it aliases the frame buffer.
	Payload []byte
}

// Disposition informs the peer of delivery state changes (section 2.7.6).
type Disposition struct {
	Role      Role   // mandatory
	First     uint32 // mandatory
	Last      *uint32
	Settled   bool
	State     DeliveryState
	Batchable bool
}

// Detach detaches a link (section 2.7.7).
type Detach struct {
	Handle uint32 // mandatory
	Closed bool
	Error  *Error
}

func (a *Attach) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if a == nil {
		return dst, errNilPerformative(a)
	}
	var l listw
	var err error
	dst = l.begin(dst, descAttach)
	dst = appendString(dst, a.Name)
	l.kept(dst)
	dst = appendUint(dst, a.Handle)
	l.kept(dst)
	dst = appendBool(dst, bool(a.Role))
	l.kept(dst)
	dst = append(dst, codeUbyte, byte(a.SndSettleMode))
	l.kept(dst)
	dst = append(dst, codeUbyte, byte(a.RcvSettleMode))
	l.kept(dst)
	if a.Source == nil {
		dst = l.null(dst)
	} else {
		if dst, err = a.Source.appendAMQP(dst, depth+1); err != nil {
			return dst, err
		}
		l.kept(dst)
	}
	if a.Target == nil {
		dst = l.null(dst)
	} else {
		if dst, err = a.Target.appendAMQP(dst, depth+1); err != nil {
			return dst, err
		}
		l.kept(dst)
	}
	if dst, err = l.optMap(dst, a.Unsettled, depth); err != nil {
		return dst, err
	}
	dst = appendBool(dst, a.IncompleteUnsettled)
	l.kept(dst)
	if a.InitialDeliveryCount != nil {
		dst = appendUint(dst, *a.InitialDeliveryCount)
		l.kept(dst)
	} else {
		dst = l.null(dst)
	}
	if a.MaxMessageSize != 0 {
		dst = appendUlong(dst, a.MaxMessageSize)
		l.kept(dst)
	} else {
		dst = l.null(dst)
	}
	if dst, err = l.symbolsThenMap(dst, [][]Symbol{a.OfferedCapabilities, a.DesiredCapabilities}, a.Properties, depth); err != nil {
		return dst, err
	}
	return l.end(dst, true)
}

func (d *decoder) decodeAttach() (*Attach, error) {
	saved, err := d.composite("attach")
	if err != nil {
		return nil, err
	}
	type alloc struct {
		a     Attach
		count uint32
	}
	al := &alloc{a: Attach{SndSettleMode: SndMixed}}
	a := &al.a
	var ok bool
	if a.Name, ok = d.stringv("name"); !ok {
		d.mandatory("name")
	}
	if a.Handle, ok = d.uint32v("handle"); !ok {
		d.mandatory("handle")
	}
	role, ok := d.boolv("role")
	if !ok {
		d.mandatory("role")
	}
	a.Role = Role(role)
	if v, ok := d.uint8v("snd-settle-mode"); ok {
		a.SndSettleMode = SndSettleMode(v)
	}
	if v, ok := d.uint8v("rcv-settle-mode"); ok {
		a.RcvSettleMode = RcvSettleMode(v)
	}
	if v, ok := d.anyv("source"); ok {
		if a.Source, ok = v.(*Source); !ok {
			d.fail("source", describe(v, "a source"))
		}
	}
	if v, ok := d.anyv("target"); ok {
		if a.Target, ok = v.(*Target); !ok {
			d.fail("target", describe(v, "a target"))
		}
	}
	a.Unsettled = d.mapv("unsettled")
	a.IncompleteUnsettled, _ = d.boolv("incomplete-unsettled")
	if v, ok := d.uint32v("initial-delivery-count"); ok {
		al.count = v
		a.InitialDeliveryCount = &al.count
	}
	a.MaxMessageSize, _ = d.uint64v("max-message-size", math.MaxUint64)
	a.OfferedCapabilities = d.symbolsv("offered-capabilities")
	a.DesiredCapabilities = d.symbolsv("desired-capabilities")
	a.Properties = d.mapv("properties")
	return a, d.done(saved)
}

func (s *Source) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if s == nil {
		return append(dst, codeNull), nil
	}
	var l listw
	var err error
	dst = l.begin(dst, descSource)
	dst = l.optString(dst, s.Address)
	dst = l.optUint(dst, s.Durable, s.Durable != 0)
	dst = l.optSymbol(dst, s.ExpiryPolicy)
	dst = l.optUint(dst, s.Timeout, s.Timeout != 0)
	dst = l.optBool(dst, s.Dynamic)
	if dst, err = l.optMap(dst, s.DynamicNodeProperties, depth); err != nil {
		return dst, err
	}
	dst = l.optSymbol(dst, s.DistributionMode)
	if dst, err = l.optMap(dst, s.Filter, depth); err != nil {
		return dst, err
	}
	if dst, err = l.optValue(dst, s.DefaultOutcome, depth); err != nil {
		return dst, err
	}
	if dst, err = l.optSymbols(dst, s.Outcomes); err != nil {
		return dst, err
	}
	if dst, err = l.optSymbols(dst, s.Capabilities); err != nil {
		return dst, err
	}
	return l.end(dst, true)
}

func (d *decoder) decodeSource() (*Source, error) {
	saved, err := d.composite("source")
	if err != nil {
		return nil, err
	}
	s := &Source{}
	s.Address, _ = d.stringv("address")
	s.Durable, _ = d.uint32v("durable")
	s.ExpiryPolicy, _ = d.symbolv("expiry-policy")
	s.Timeout, _ = d.uint32v("timeout")
	s.Dynamic, _ = d.boolv("dynamic")
	s.DynamicNodeProperties = d.mapv("dynamic-node-properties")
	s.DistributionMode, _ = d.symbolv("distribution-mode")
	s.Filter = d.mapv("filter")
	s.DefaultOutcome, _ = d.anyv("default-outcome")
	s.Outcomes = d.symbolsv("outcomes")
	s.Capabilities = d.symbolsv("capabilities")
	return s, d.done(saved)
}

func (t *Target) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if t == nil {
		return append(dst, codeNull), nil
	}
	var l listw
	var err error
	if t.Coordinator {
		dst = l.begin(dst, descCoordinator)
		if dst, err = l.optSymbols(dst, t.Capabilities); err != nil {
			return dst, err
		}
		return l.end(dst, true)
	}
	dst = l.begin(dst, descTarget)
	dst = l.optString(dst, t.Address)
	dst = l.optUint(dst, t.Durable, t.Durable != 0)
	dst = l.optSymbol(dst, t.ExpiryPolicy)
	dst = l.optUint(dst, t.Timeout, t.Timeout != 0)
	dst = l.optBool(dst, t.Dynamic)
	if dst, err = l.optMap(dst, t.DynamicNodeProperties, depth); err != nil {
		return dst, err
	}
	if dst, err = l.optSymbols(dst, t.Capabilities); err != nil {
		return dst, err
	}
	return l.end(dst, true)
}

func (d *decoder) decodeTarget() (*Target, error) {
	saved, err := d.composite("target")
	if err != nil {
		return nil, err
	}
	t := &Target{}
	t.Address, _ = d.stringv("address")
	t.Durable, _ = d.uint32v("durable")
	t.ExpiryPolicy, _ = d.symbolv("expiry-policy")
	t.Timeout, _ = d.uint32v("timeout")
	t.Dynamic, _ = d.boolv("dynamic")
	t.DynamicNodeProperties = d.mapv("dynamic-node-properties")
	t.Capabilities = d.symbolsv("capabilities")
	return t, d.done(saved)
}

func (d *decoder) decodeCoordinator() (*Target, error) {
	saved, err := d.composite("coordinator")
	if err != nil {
		return nil, err
	}
	t := &Target{Coordinator: true}
	t.Capabilities = d.symbolsv("capabilities")
	return t, d.done(saved)
}

func (fl *Flow) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if fl == nil {
		return dst, errNilPerformative(fl)
	}
	var l listw
	dst = l.begin(dst, descFlow)
	dst = l.optPtr(dst, fl.NextIncomingID)
	dst = appendUint(dst, fl.IncomingWindow)
	l.kept(dst)
	dst = appendUint(dst, fl.NextOutgoingID)
	l.kept(dst)
	dst = appendUint(dst, fl.OutgoingWindow)
	l.kept(dst)
	dst = l.optPtr(dst, fl.Handle)
	dst = l.optPtr(dst, fl.DeliveryCount)
	dst = l.optPtr(dst, fl.LinkCredit)
	dst = l.optPtr(dst, fl.Available)
	dst = l.optBool(dst, fl.Drain)
	dst = l.optBool(dst, fl.Echo)
	dst, err := l.optMap(dst, fl.Properties, depth)
	if err != nil {
		return dst, err
	}
	return l.end(dst, false)
}

// optPtr writes a uint field that is absent when p is nil.
func (l *listw) optPtr(dst []byte, p *uint32) []byte {
	if p == nil {
		return l.null(dst)
	}
	return l.optUint(dst, *p, true)
}

func (d *decoder) decodeFlow() (*Flow, error) {
	saved, err := d.composite("flow")
	if err != nil {
		return nil, err
	}
	type alloc struct {
		f                                                            Flow
		nextIncomingID, handle, deliveryCount, linkCredit, available uint32
	}
	a := &alloc{}
	fl := &a.f
	if v, ok := d.uint32v("next-incoming-id"); ok {
		a.nextIncomingID = v
		fl.NextIncomingID = &a.nextIncomingID
	}
	var ok bool
	if fl.IncomingWindow, ok = d.uint32v("incoming-window"); !ok {
		d.mandatory("incoming-window")
	}
	if fl.NextOutgoingID, ok = d.uint32v("next-outgoing-id"); !ok {
		d.mandatory("next-outgoing-id")
	}
	if fl.OutgoingWindow, ok = d.uint32v("outgoing-window"); !ok {
		d.mandatory("outgoing-window")
	}
	if v, ok := d.uint32v("handle"); ok {
		a.handle = v
		fl.Handle = &a.handle
	}
	if v, ok := d.uint32v("delivery-count"); ok {
		a.deliveryCount = v
		fl.DeliveryCount = &a.deliveryCount
	}
	if v, ok := d.uint32v("link-credit"); ok {
		a.linkCredit = v
		fl.LinkCredit = &a.linkCredit
	}
	if v, ok := d.uint32v("available"); ok {
		a.available = v
		fl.Available = &a.available
	}
	fl.Drain, _ = d.boolv("drain")
	fl.Echo, _ = d.boolv("echo")
	fl.Properties = d.mapv("properties")
	return fl, d.done(saved)
}

func (t *Transfer) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if t == nil {
		return dst, errNilPerformative(t)
	}
	var l listw
	dst = l.begin(dst, descTransfer)
	dst = appendUint(dst, t.Handle)
	l.kept(dst)
	dst = l.optPtr(dst, t.DeliveryID)
	dst = l.optBinary(dst, t.DeliveryTag)
	dst = l.optPtr(dst, t.MessageFormat)
	if t.Settled != nil {
		dst = appendBool(dst, *t.Settled)
		l.kept(dst)
	} else {
		dst = l.null(dst)
	}
	dst = l.optBool(dst, t.More)
	if t.RcvSettleMode != nil {
		dst = append(dst, codeUbyte, byte(*t.RcvSettleMode))
		l.kept(dst)
	} else {
		dst = l.null(dst)
	}
	dst, err := l.optValue(dst, t.State, depth)
	if err != nil {
		return dst, err
	}
	dst = l.optBool(dst, t.Resume)
	dst = l.optBool(dst, t.Aborted)
	dst = l.optBool(dst, t.Batchable)
	return l.end(dst, false)
}

func (d *decoder) decodeTransfer() (*Transfer, error) {
	saved, err := d.composite("transfer")
	if err != nil {
		return nil, err
	}
	type alloc struct {
		t                         Transfer
		deliveryID, messageFormat uint32
		settled                   bool
		rcvSettleMode             RcvSettleMode
	}
	a := &alloc{}
	t := &a.t
	var ok bool
	if t.Handle, ok = d.uint32v("handle"); !ok {
		d.mandatory("handle")
	}
	if v, ok := d.uint32v("delivery-id"); ok {
		a.deliveryID = v
		t.DeliveryID = &a.deliveryID
	}
	t.DeliveryTag, _ = d.binaryv("delivery-tag")
	if v, ok := d.uint32v("message-format"); ok {
		a.messageFormat = v
		t.MessageFormat = &a.messageFormat
	}
	if v, ok := d.boolv("settled"); ok {
		a.settled = v
		t.Settled = &a.settled
	}
	t.More, _ = d.boolv("more")
	if v, ok := d.uint8v("rcv-settle-mode"); ok {
		a.rcvSettleMode = RcvSettleMode(v)
		t.RcvSettleMode = &a.rcvSettleMode
	}
	t.State = d.statev("state")
	t.Resume, _ = d.boolv("resume")
	t.Aborted, _ = d.boolv("aborted")
	t.Batchable, _ = d.boolv("batchable")
	return t, d.done(saved)
}

func (p *Disposition) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if p == nil {
		return dst, errNilPerformative(p)
	}
	var l listw
	dst = l.begin(dst, descDisposition)
	dst = appendBool(dst, bool(p.Role))
	l.kept(dst)
	dst = appendUint(dst, p.First)
	l.kept(dst)
	dst = l.optPtr(dst, p.Last)
	dst = l.optBool(dst, p.Settled)
	dst, err := l.optValue(dst, p.State, depth)
	if err != nil {
		return dst, err
	}
	dst = l.optBool(dst, p.Batchable)
	return l.end(dst, false)
}

func (d *decoder) decodeDisposition() (*Disposition, error) {
	saved, err := d.composite("disposition")
	if err != nil {
		return nil, err
	}
	type alloc struct {
		p    Disposition
		last uint32
	}
	a := &alloc{}
	p := &a.p
	role, ok := d.boolv("role")
	if !ok {
		d.mandatory("role")
	}
	p.Role = Role(role)
	if p.First, ok = d.uint32v("first"); !ok {
		d.mandatory("first")
	}
	if v, ok := d.uint32v("last"); ok {
		a.last = v
		p.Last = &a.last
	}
	p.Settled, _ = d.boolv("settled")
	p.State = d.statev("state")
	p.Batchable, _ = d.boolv("batchable")
	return p, d.done(saved)
}

func (p *Detach) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if p == nil {
		return dst, errNilPerformative(p)
	}
	var l listw
	dst = l.begin(dst, descDetach)
	dst = appendUint(dst, p.Handle)
	l.kept(dst)
	dst = l.optBool(dst, p.Closed)
	dst, err := l.optError(dst, p.Error, depth)
	if err != nil {
		return dst, err
	}
	return l.end(dst, false)
}

func (d *decoder) decodeDetach() (*Detach, error) {
	saved, err := d.composite("detach")
	if err != nil {
		return nil, err
	}
	p := &Detach{}
	var ok bool
	if p.Handle, ok = d.uint32v("handle"); !ok {
		d.mandatory("handle")
	}
	p.Closed, _ = d.boolv("closed")
	p.Error = d.errorv("error")
	return p, d.done(saved)
}

// appendErrorOnly writes end or close: a list of one optional error.
