package amqp

import (
	"fmt"
	"math"
)

// Performative is the body of a frame: one of the nine transport
// performatives (*Open, *Begin, *Attach, *Flow, *Transfer, *Disposition,
// *Detach, *End, *Close), carried in [FrameAMQP] frames, or one of the five
// SASL frames (*SASLMechanisms, *SASLInit, *SASLChallenge, *SASLResponse,
// *SASLOutcome), carried in [FrameSASL] frames. Only this package's types
// implement it.
type Performative interface {
	performative()
	encoder
}

func (*Open) performative()        {}
func (*Begin) performative()       {}
func (*Attach) performative()      {}
func (*Flow) performative()        {}
func (*Transfer) performative()    {}
func (*Disposition) performative() {}
func (*Detach) performative()      {}
func (*End) performative()         {}
func (*Close) performative()       {}

// Open negotiates the connection's parameters (part 2, section 2.7.1).
// Encoding always writes all ten fields.
type Open struct {
	ContainerID string // mandatory
	Hostname    string // "" is absent
	// MaxFrameSize is the largest frame this side accepts; decoding an
	// absent field gives 4294967295. It is encoded as given (set it).
	MaxFrameSize uint32
	// ChannelMax is the highest channel number this side accepts; decoding
	// an absent field gives 65535. It is encoded as given (set it).
	ChannelMax uint16
	// IdleTimeOut is in milliseconds; 0 means none (absent).
	IdleTimeOut                              uint32
	OutgoingLocales, IncomingLocales         []Symbol // nil is absent
	OfferedCapabilities, DesiredCapabilities []Symbol
	Properties                               Map // symbol keys; nil is absent
}

// Begin starts a session (section 2.7.2). Encoding always writes all eight
// fields.
type Begin struct {
	RemoteChannel  *uint16 // nil is absent (a begin that starts a session)
	NextOutgoingID uint32  // mandatory
	IncomingWindow uint32  // mandatory
	OutgoingWindow uint32  // mandatory
	// HandleMax is the highest link handle this side accepts; decoding an
	// absent field gives 4294967295. It is encoded as given (set it).
	HandleMax                                uint32
	OfferedCapabilities, DesiredCapabilities []Symbol
	Properties                               Map
}

// End ends a session (section 2.7.8).
type End struct {
	Error *Error
}

// Close closes the connection (section 2.7.9).
type Close struct {
	Error *Error
}

// Error is the AMQP error type (section 2.8.14): a condition such as
// "amqp:not-found", a description, and an info map. It implements error.
type Error struct {
	Condition   Symbol // mandatory
	Description string
	Info        Map
}

// Error formats the condition and, when set, the description.
func (e *Error) Error() string {
	if e.Description == "" {
		return "amqp: " + string(e.Condition)
	}
	return fmt.Sprintf("amqp: %s: %s", e.Condition, e.Description)
}

func (o *Open) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if o == nil {
		return dst, errNilPerformative(o)
	}
	var l listw
	var err error
	dst = l.begin(dst, descOpen)
	dst = appendString(dst, o.ContainerID)
	l.kept(dst)
	dst = l.optString(dst, o.Hostname)
	dst = appendUint(dst, o.MaxFrameSize)
	l.kept(dst)
	dst = appendUshort(dst, o.ChannelMax)
	l.kept(dst)
	dst = l.optUint(dst, o.IdleTimeOut, o.IdleTimeOut != 0)
	if dst, err = l.symbolsThenMap(dst, [][]Symbol{o.OutgoingLocales, o.IncomingLocales, o.OfferedCapabilities, o.DesiredCapabilities}, o.Properties, depth); err != nil {
		return dst, err
	}
	return l.end(dst, true)
}

func (d *decoder) decodeOpen() (*Open, error) {
	saved, err := d.composite("open")
	if err != nil {
		return nil, err
	}
	o := &Open{MaxFrameSize: math.MaxUint32, ChannelMax: math.MaxUint16}
	var ok bool
	if o.ContainerID, ok = d.stringv("container-id"); !ok {
		d.mandatory("container-id")
	}
	o.Hostname, _ = d.stringv("hostname")
	if v, ok := d.uint32v("max-frame-size"); ok {
		o.MaxFrameSize = v
	}
	if v, ok := d.uint16v("channel-max"); ok {
		o.ChannelMax = v
	}
	o.IdleTimeOut, _ = d.uint32v("idle-time-out")
	o.OutgoingLocales = d.symbolsv("outgoing-locales")
	o.IncomingLocales = d.symbolsv("incoming-locales")
	o.OfferedCapabilities = d.symbolsv("offered-capabilities")
	o.DesiredCapabilities = d.symbolsv("desired-capabilities")
	o.Properties = d.mapv("properties")
	return o, d.done(saved)
}

func (b *Begin) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if b == nil {
		return dst, errNilPerformative(b)
	}
	var l listw
	var err error
	dst = l.begin(dst, descBegin)
	if b.RemoteChannel != nil {
		dst = appendUshort(dst, *b.RemoteChannel)
		l.kept(dst)
	} else {
		dst = l.null(dst)
	}
	for _, v := range [...]uint32{b.NextOutgoingID, b.IncomingWindow, b.OutgoingWindow, b.HandleMax} {
		dst = appendUint(dst, v)
		l.kept(dst)
	}
	if dst, err = l.symbolsThenMap(dst, [][]Symbol{b.OfferedCapabilities, b.DesiredCapabilities}, b.Properties, depth); err != nil {
		return dst, err
	}
	return l.end(dst, true)
}

func (d *decoder) decodeBegin() (*Begin, error) {
	saved, err := d.composite("begin")
	if err != nil {
		return nil, err
	}
	type alloc struct {
		b             Begin
		remoteChannel uint16
	}
	a := &alloc{b: Begin{HandleMax: math.MaxUint32}}
	b := &a.b
	if v, ok := d.uint16v("remote-channel"); ok {
		a.remoteChannel = v
		b.RemoteChannel = &a.remoteChannel
	}
	var ok bool
	if b.NextOutgoingID, ok = d.uint32v("next-outgoing-id"); !ok {
		d.mandatory("next-outgoing-id")
	}
	if b.IncomingWindow, ok = d.uint32v("incoming-window"); !ok {
		d.mandatory("incoming-window")
	}
	if b.OutgoingWindow, ok = d.uint32v("outgoing-window"); !ok {
		d.mandatory("outgoing-window")
	}
	if v, ok := d.uint32v("handle-max"); ok {
		b.HandleMax = v
	}
	b.OfferedCapabilities = d.symbolsv("offered-capabilities")
	b.DesiredCapabilities = d.symbolsv("desired-capabilities")
	b.Properties = d.mapv("properties")
	return b, d.done(saved)
}

func appendErrorOnly(dst []byte, desc byte, e *Error, depth int) ([]byte, error) {
	var l listw
	dst = l.begin(dst, desc)
	dst, err := l.optError(dst, e, depth)
	if err != nil {
		return dst, err
	}
	return l.end(dst, false)
}

// optError writes an error field; nil is absent.
func (l *listw) optError(dst []byte, e *Error, depth int) ([]byte, error) {
	if e == nil {
		return l.null(dst), nil
	}
	dst, err := e.appendAMQP(dst, depth+1)
	if err != nil {
		return dst, err
	}
	l.kept(dst)
	return dst, nil
}

func (p *End) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if p == nil {
		return dst, errNilPerformative(p)
	}
	return appendErrorOnly(dst, descEnd, p.Error, depth)
}

func (p *Close) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if p == nil {
		return dst, errNilPerformative(p)
	}
	return appendErrorOnly(dst, descClose, p.Error, depth)
}

func (d *decoder) decodeEnd() (*End, error) {
	saved, err := d.composite("end")
	if err != nil {
		return nil, err
	}
	p := &End{Error: d.errorv("error")}
	return p, d.done(saved)
}

func (d *decoder) decodeClose() (*Close, error) {
	saved, err := d.composite("close")
	if err != nil {
		return nil, err
	}
	p := &Close{Error: d.errorv("error")}
	return p, d.done(saved)
}

func (e *Error) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if e == nil {
		return append(dst, codeNull), nil
	}
	var l listw
	dst = l.begin(dst, descError)
	dst = appendSymbol(dst, e.Condition)
	l.kept(dst)
	dst = l.optString(dst, e.Description)
	dst, err := l.optMap(dst, e.Info, depth)
	if err != nil {
		return dst, err
	}
	return l.end(dst, false)
}

func (d *decoder) decodeError() (*Error, error) {
	saved, err := d.composite("error")
	if err != nil {
		return nil, err
	}
	e := &Error{}
	var ok bool
	if e.Condition, ok = d.symbolv("condition"); !ok {
		d.mandatory("condition")
	}
	e.Description, _ = d.stringv("description")
	e.Info = d.mapv("info")
	return e, d.done(saved)
}

// errorv reads an error (descriptor 0x1d).
func (d *decoder) errorv(name string) *Error {
	v, ok := d.anyv(name)
	if !ok {
		return nil
	}
	e, ok := v.(*Error)
	if !ok {
		d.fail(name, describe(v, "an error"))
		return nil
	}
	return e
}

// errNilPerformative is the error of encoding a nil performative.
func errNilPerformative(p Performative) error {
	return fmt.Errorf("%w: nil %T", ErrEncode, p)
}
