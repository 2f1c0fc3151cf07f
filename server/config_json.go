package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reading Config.json: a JSON-with-comments pre-pass, then a tree of values
// that remembers each value's JSON path, in the order of the file, so that
// every error names the culprit as the user wrote it.

// stripJSONC returns a copy of data in which a UTF-8 byte order mark, //
// and /* */ comments and trailing commas (a ',' before '}' or ']') are
// replaced by spaces, newlines kept: offsets in the copy are offsets in
// data. Strings, escapes included, are left alone.
func stripJSONC(data []byte) ([]byte, error) {
	out := bytes.Clone(data)
	if bytes.HasPrefix(out, []byte("\xEF\xBB\xBF")) {
		copy(out, "   ")
	}
	// Comments first, so that the comma pass sees them as white space.
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			start := i
			out[i], out[i+1] = ' ', ' '
			for i += 2; i+1 < len(out) && (out[i] != '*' || out[i+1] != '/'); i++ {
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
			if i+1 >= len(out) {
				return nil, invalidf(position(data, start), "the /* comment is not closed")
			}
			out[i], out[i+1] = ' ', ' '
			i++
		}
	}
	inString = false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ',':
			j := i + 1
			for j < len(out) && isSpace(out[j]) {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// position names byte offset off of data as "line L, column C" (both from
// 1; columns count characters).
func position(data []byte, off int) string {
	off = min(max(off, 0), len(data))
	line, start := 1, 0
	for i, c := range data[:off] {
		if c == '\n' {
			line, start = line+1, i+1
		}
	}
	return "line " + strconv.Itoa(line) + ", column " + strconv.Itoa(utf8.RuneCount(data[start:off])+1)
}

// jsonKind is the kind of a JSON value.
type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonObject
	jsonArray
)

// value is one JSON value of the file and its path there
// ("UserConfig.Namespaces[0].Queues[2].Name").
type value struct {
	path  string
	kind  jsonKind
	b     bool
	num   json.Number
	str   string
	keys  []string // an object's keys, in the file's order
	elems []*value // an object's values (beside keys) or an array's elements
}

// maxDepth bounds the nesting of a config file; the emulator's needs 9.
const maxDepth = 64

// parseTree reads the JSON-with-comments document data into a tree.
func parseTree(data []byte) (*value, error) {
	clean, err := stripJSONC(data)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(clean))
	dec.UseNumber()
	syntax := func(err error) error {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return invalidf(position(data, int(se.Offset)), "%s", strings.TrimPrefix(se.Error(), "json: "))
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return invalidf(position(data, len(data)), "the document ends too early")
		}
		return invalidf(position(data, int(dec.InputOffset())), "%v", err)
	}
	v, err := readValue(dec, "", 0, syntax)
	if err != nil {
		return nil, err
	}
	end := int(dec.InputOffset())
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		for end < len(clean) && isSpace(clean[end]) {
			end++
		}
		return nil, invalidf(position(data, end), "more data after the top-level value")
	}
	return v, nil
}

func readValue(dec *json.Decoder, path string, depth int, syntax func(error) error) (*value, error) {
	if depth > maxDepth {
		return nil, invalidf(path, "nested more than %d deep", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, syntax(err)
	}
	v := &value{path: path}
	switch t := tok.(type) {
	case nil:
		v.kind = jsonNull
	case bool:
		v.kind, v.b = jsonBool, t
	case json.Number:
		v.kind, v.num = jsonNumber, t
	case string:
		v.kind, v.str = jsonString, t
	case json.Delim:
		v.kind = jsonArray
		if t == '{' {
			v.kind = jsonObject
		}
		for i := 0; dec.More(); i++ {
			child := path + "[" + strconv.Itoa(i) + "]"
			if v.kind == jsonObject {
				tok, err := dec.Token()
				if err != nil {
					return nil, syntax(err)
				}
				key, _ := tok.(string) // the decoder allows only strings here
				v.keys = append(v.keys, key)
				child = joinPath(path, key)
			}
			e, err := readValue(dec, child, depth+1, syntax)
			if err != nil {
				return nil, err
			}
			v.elems = append(v.elems, e)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, syntax(err)
		}
	}
	return v, nil
}

// joinPath names key of the object at path: ".Key", or ["key"] for a key
// that is not an identifier.
func joinPath(path, key string) string {
	ident := key != ""
	for i, c := range key {
		if !(c == '_' || c == '$' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			ident = false
			break
		}
	}
	switch {
	case !ident:
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

// get returns the member of object v named name, matched
// case-insensitively (the last one if the file repeats it), or nil when v
// has none or it is null: null is the same as leaving a key out.
func (v *value) get(name string) *value {
	if v == nil || v.kind != jsonObject {
		return nil
	}
	var found *value
	for i, k := range v.keys {
		if strings.EqualFold(k, name) {
			found = v.elems[i]
		}
	}
	if found != nil && found.kind == jsonNull {
		return nil
	}
	return found
}

// pathOf gives the path of member name of object v, whether or not it is
// there: what an error about a missing member names.
func (v *value) pathOf(name string) string {
	if m := v.get(name); m != nil {
		return m.path
	}
	return joinPath(v.path, name)
}

// describe shows v in an error: a string or number as written, an object
// or array by its kind.
func (v *value) describe() string {
	switch v.kind {
	case jsonNull:
		return "null"
	case jsonBool:
		return strconv.FormatBool(v.b)
	case jsonNumber:
		return v.num.String()
	case jsonString:
		return strconv.Quote(v.str)
	case jsonObject:
		return "an object"
	}
	return "an array"
}

// object checks that v is an object.
func (v *value) object() error {
	if v.kind != jsonObject {
		return invalidf(v.path, "%s is not an object", v.describe())
	}
	return nil
}

// array returns the elements of array v.
func (v *value) array() ([]*value, error) {
	if v.kind != jsonArray {
		return nil, invalidf(v.path, "%s is not an array", v.describe())
	}
	return v.elems, nil
}

// text returns the string v holds.
func (v *value) text() (string, error) {
	if v.kind != jsonString {
		return "", invalidf(v.path, "%s is not a string", v.describe())
	}
	return v.str, nil
}

// boolean returns the true or false v holds.
func (v *value) boolean() (bool, error) {
	if v.kind != jsonBool {
		return false, invalidf(v.path, "%s is not true or false", v.describe())
	}
	return v.b, nil
}

// positive returns the whole number v holds, which must be at least 1 and
// fit bits bits: in minibus's properties 0 means "the default", so it is
// refused here rather than read as one.
func (v *value) positive(bits int) (int64, error) {
	if v.kind != jsonNumber {
		return 0, invalidf(v.path, "%s is not a number", v.describe())
	}
	n, err := strconv.ParseInt(v.num.String(), 10, bits)
	switch {
	case err != nil:
		return 0, invalidf(v.path, "%s is not a whole number of %d bits", v.describe(), bits)
	case n < 1:
		return 0, invalidf(v.path, "%s is less than 1", v.describe())
	}
	return n, nil
}
