package amqp

// DeliveryState is the state of a delivery carried by transfer and
// disposition (part 2 section 2.7.5, part 3 section 3.4): *Received, or an
// outcome (*Accepted, *Rejected, *Released, *Modified), or an
// *UnknownState for a descriptor the codec does not know (a transactional
// state 0x34, declared 0x33 ...). Only this package's types implement it.
type DeliveryState interface {
	deliveryState()
	encoder
}

// Received is the received delivery state (descriptor 0x23): where a
// partially received delivery should resume.
type Received struct {
	SectionNumber uint32 // mandatory
	SectionOffset uint64 // mandatory
}

// Accepted is the accepted outcome (descriptor 0x24).
type Accepted struct{}

// Rejected is the rejected outcome (descriptor 0x25), with an optional
// error saying why.
type Rejected struct {
	Error *Error
}

// Released is the released outcome (descriptor 0x26).
type Released struct{}

// Modified is the modified outcome (descriptor 0x27).
type Modified struct {
	DeliveryFailed     bool
	UndeliverableHere  bool
	MessageAnnotations Map
}

// UnknownState is a delivery state whose descriptor the codec does not
// know; it re-encodes as the described value it was decoded from.
type UnknownState struct {
	Descriptor any
	Value      any
}

func (*Received) deliveryState()     {}
func (*Accepted) deliveryState()     {}
func (*Rejected) deliveryState()     {}
func (*Released) deliveryState()     {}
func (*Modified) deliveryState()     {}
func (*UnknownState) deliveryState() {}

func (s *Received) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if s == nil {
		return append(dst, codeNull), nil
	}
	var l listw
	dst = l.begin(dst, descReceived)
	dst = appendUint(dst, s.SectionNumber)
	l.kept(dst)
	dst = appendUlong(dst, s.SectionOffset)
	l.kept(dst)
	return l.end(dst, true)
}

func (s *Accepted) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if s == nil {
		return append(dst, codeNull), nil
	}
	return append(dst, codeDescribed, codeSmallUlong, descAccepted, codeList0), nil
}

func (s *Released) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if s == nil {
		return append(dst, codeNull), nil
	}
	return append(dst, codeDescribed, codeSmallUlong, descReleased, codeList0), nil
}

func (s *Rejected) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if s == nil {
		return append(dst, codeNull), nil
	}
	return appendErrorOnly(dst, descRejected, s.Error, depth)
}

func (s *Modified) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if s == nil {
		return append(dst, codeNull), nil
	}
	var l listw
	dst = l.begin(dst, descModified)
	dst = l.optBool(dst, s.DeliveryFailed)
	dst = l.optBool(dst, s.UndeliverableHere)
	dst, err := l.optMap(dst, s.MessageAnnotations, depth)
	if err != nil {
		return dst, err
	}
	return l.end(dst, false)
}

func (s *UnknownState) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if s == nil {
		return append(dst, codeNull), nil
	}
	return appendDescribed(dst, s.Descriptor, s.Value, depth)
}

func (d *decoder) decodeReceived() (*Received, error) {
	saved, err := d.composite("received")
	if err != nil {
		return nil, err
	}
	s := &Received{}
	var ok bool
	if s.SectionNumber, ok = d.uint32v("section-number"); !ok {
		d.mandatory("section-number")
	}
	if s.SectionOffset, ok = d.uint64v("section-offset", 1<<64-1); !ok {
		d.mandatory("section-offset")
	}
	return s, d.done(saved)
}

func (d *decoder) decodeAccepted() (*Accepted, error) {
	saved, err := d.composite("accepted")
	if err != nil {
		return nil, err
	}
	return &Accepted{}, d.done(saved)
}

func (d *decoder) decodeReleased() (*Released, error) {
	saved, err := d.composite("released")
	if err != nil {
		return nil, err
	}
	return &Released{}, d.done(saved)
}

func (d *decoder) decodeRejected() (*Rejected, error) {
	saved, err := d.composite("rejected")
	if err != nil {
		return nil, err
	}
	s := &Rejected{Error: d.errorv("error")}
	return s, d.done(saved)
}

func (d *decoder) decodeModified() (*Modified, error) {
	saved, err := d.composite("modified")
	if err != nil {
		return nil, err
	}
	s := &Modified{}
	s.DeliveryFailed, _ = d.boolv("delivery-failed")
	s.UndeliverableHere, _ = d.boolv("undeliverable-here")
	s.MessageAnnotations = d.mapv("message-annotations")
	return s, d.done(saved)
}

// statev reads a delivery state or outcome; a described value of a
// descriptor the codec does not know becomes an *UnknownState.
func (d *decoder) statev(name string) DeliveryState {
	v, ok := d.anyv(name)
	if !ok {
		return nil
	}
	switch x := v.(type) {
	case DeliveryState:
		return x
	case Described:
		return &UnknownState{Descriptor: x.Descriptor, Value: x.Value}
	}
	d.fail(name, describe(v, "a delivery state"))
	return nil
}
