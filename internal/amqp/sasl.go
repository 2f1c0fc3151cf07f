package amqp

// SASLMechanisms is the server's list of SASL mechanisms (part 5, section
// 5.3.3.1, descriptor 0x40). Mechanisms is encoded as an array of symbols,
// even when it holds one.
type SASLMechanisms struct {
	Mechanisms []Symbol // mandatory: at least one
}

// SASLInit is the client's choice of mechanism and its initial response
// (descriptor 0x41).
type SASLInit struct {
	Mechanism       Symbol // mandatory
	InitialResponse []byte // nil is absent
	Hostname        string // "" is absent
}

// SASLChallenge is a server challenge (descriptor 0x42).
type SASLChallenge struct {
	Challenge []byte // mandatory
}

// SASLResponse is a client response to a challenge (descriptor 0x43).
type SASLResponse struct {
	Response []byte // mandatory
}

// SASLOutcome ends the SASL exchange (descriptor 0x44).
type SASLOutcome struct {
	Code           SASLCode // mandatory
	AdditionalData []byte   // nil is absent
}

func (*SASLMechanisms) performative() {}
func (*SASLInit) performative()       {}
func (*SASLChallenge) performative()  {}
func (*SASLResponse) performative()   {}
func (*SASLOutcome) performative()    {}

func (p *SASLMechanisms) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if p == nil {
		return dst, errNilPerformative(p)
	}
	var l listw
	dst = l.begin(dst, descSASLMechanisms)
	mechs := p.Mechanisms
	if mechs == nil {
		mechs = []Symbol{}
	}
	dst, err := l.optSymbols(dst, mechs)
	if err != nil {
		return dst, err
	}
	return l.end(dst, false)
}

func (d *decoder) decodeSASLMechanisms() (*SASLMechanisms, error) {
	saved, err := d.composite("sasl-mechanisms")
	if err != nil {
		return nil, err
	}
	p := &SASLMechanisms{Mechanisms: d.symbolsv("sasl-server-mechanisms")}
	if p.Mechanisms == nil {
		d.mandatory("sasl-server-mechanisms")
	}
	return p, d.done(saved)
}

func (p *SASLInit) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if p == nil {
		return dst, errNilPerformative(p)
	}
	var l listw
	dst = l.begin(dst, descSASLInit)
	dst = appendSymbol(dst, p.Mechanism)
	l.kept(dst)
	dst = l.optBinary(dst, p.InitialResponse)
	dst = l.optString(dst, p.Hostname)
	return l.end(dst, false)
}

func (d *decoder) decodeSASLInit() (*SASLInit, error) {
	saved, err := d.composite("sasl-init")
	if err != nil {
		return nil, err
	}
	p := &SASLInit{}
	var ok bool
	if p.Mechanism, ok = d.symbolv("mechanism"); !ok {
		d.mandatory("mechanism")
	}
	p.InitialResponse, _ = d.binaryv("initial-response")
	p.Hostname, _ = d.stringv("hostname")
	return p, d.done(saved)
}

// appendOneBinary writes a SASL frame whose list is one mandatory binary.
func appendOneBinary(dst []byte, desc byte, b []byte) ([]byte, error) {
	var l listw
	dst = l.begin(dst, desc)
	if b == nil {
		b = []byte{}
	}
	dst = appendBinary(dst, b)
	l.kept(dst)
	return l.end(dst, false)
}

func (p *SASLChallenge) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if p == nil {
		return dst, errNilPerformative(p)
	}
	return appendOneBinary(dst, descSASLChallenge, p.Challenge)
}

func (p *SASLResponse) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if p == nil {
		return dst, errNilPerformative(p)
	}
	return appendOneBinary(dst, descSASLResponse, p.Response)
}

func (d *decoder) decodeSASLChallenge() (*SASLChallenge, error) {
	saved, err := d.composite("sasl-challenge")
	if err != nil {
		return nil, err
	}
	p := &SASLChallenge{}
	var ok bool
	if p.Challenge, ok = d.binaryv("challenge"); !ok {
		d.mandatory("challenge")
	}
	return p, d.done(saved)
}

func (d *decoder) decodeSASLResponse() (*SASLResponse, error) {
	saved, err := d.composite("sasl-response")
	if err != nil {
		return nil, err
	}
	p := &SASLResponse{}
	var ok bool
	if p.Response, ok = d.binaryv("response"); !ok {
		d.mandatory("response")
	}
	return p, d.done(saved)
}

func (p *SASLOutcome) appendAMQP(dst []byte, depth int) ([]byte, error) {
	if p == nil {
		return dst, errNilPerformative(p)
	}
	var l listw
	dst = l.begin(dst, descSASLOutcome)
	dst = append(dst, codeUbyte, byte(p.Code))
	l.kept(dst)
	dst = l.optBinary(dst, p.AdditionalData)
	return l.end(dst, false)
}

func (d *decoder) decodeSASLOutcome() (*SASLOutcome, error) {
	saved, err := d.composite("sasl-outcome")
	if err != nil {
		return nil, err
	}
	p := &SASLOutcome{}
	code, ok := d.uint8v("code")
	if !ok {
		d.mandatory("code")
	}
	p.Code = SASLCode(code)
	p.AdditionalData, _ = d.binaryv("additional-data")
	return p, d.done(saved)
}
