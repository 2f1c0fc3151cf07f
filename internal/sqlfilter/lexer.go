package sqlfilter

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind classifies a token.
type tokKind uint8

const (
	tokEOF    tokKind = iota // end of the expression
	tokIdent                 // regular identifier or keyword; text as written
	tokDelim                 // [delimited] or "quoted" identifier; text unescaped
	tokString                // 'string'; text unescaped
	tokInt                   // digits only; text as written
	tokFloat                 // digits with '.' or an exponent; text as written
	tokParam                 // @name; text is the name without '@'
	tokOp                    // operator or punctuation; text is the operator
)

// token is one lexeme with its byte span [pos, end) in the source.
type token struct {
	kind tokKind
	pos  int
	end  int
	text string
}

// lex splits src into tokens, ending with one tokEOF. It fails on the first
// character that starts no token, and on unterminated strings and
// identifiers.
func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(src) {
		r, w := utf8.DecodeRuneInString(src[i:])
		switch {
		case unicode.IsSpace(r):
			i += w
			continue
		case unicode.IsLetter(r):
			j := i + w
			for j < len(src) {
				r2, w2 := utf8.DecodeRuneInString(src[j:])
				if !isIdentPart(r2) {
					break
				}
				j += w2
			}
			toks = append(toks, token{kind: tokIdent, pos: i, end: j, text: src[i:j]})
			i = j
			continue
		case isDigit(r) || (r == '.' && i+1 < len(src) && isDigit(rune(src[i+1]))):
			t, err := lexNumber(src, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, t)
			i = t.end
			continue
		case r == '\'' || r == '[' || r == '"':
			t, err := lexQuoted(src, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, t)
			i = t.end
			continue
		case r == '@':
			j := i + 1
			for j < len(src) {
				r2, w2 := utf8.DecodeRuneInString(src[j:])
				if !isIdentPart(r2) {
					break
				}
				j += w2
			}
			if j == i+1 {
				return nil, &SyntaxError{Pos: i, Token: "@", Msg: "'@' must be followed by a parameter name"}
			}
			toks = append(toks, token{kind: tokParam, pos: i, end: j, text: src[i+1 : j]})
			i = j
			continue
		}
		if op := lexOp(src[i:]); op != "" {
			toks = append(toks, token{kind: tokOp, pos: i, end: i + len(op), text: op})
			i += len(op)
			continue
		}
		return nil, &SyntaxError{Pos: i, Token: src[i : i+w], Msg: "unexpected character"}
	}
	toks = append(toks, token{kind: tokEOF, pos: len(src), end: len(src)})
	return toks, nil
}

// lexOp returns the operator or punctuation s starts with, or "".
func lexOp(s string) string {
	if len(s) >= 2 {
		switch s[:2] {
		case "<>", "!=", "<=", ">=":
			return s[:2]
		}
	}
	switch s[0] {
	case '=', '<', '>', '+', '-', '*', '/', '%', '(', ')', ',', ';', '.':
		return s[:1]
	}
	return ""
}

// lexNumber scans an integer (digits), a decimal (digits '.' digits, either
// side may be empty but not both) or an approximate number (either followed
// by E, an optional sign and digits) starting at i.
func lexNumber(src string, i int) (token, error) {
	start := i
	kind := tokInt
	for i < len(src) && isDigit(rune(src[i])) {
		i++
	}
	if i < len(src) && src[i] == '.' {
		kind = tokFloat
		i++
		for i < len(src) && isDigit(rune(src[i])) {
			i++
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		kind = tokFloat
		j := i + 1
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j >= len(src) || !isDigit(rune(src[j])) {
			return token{}, &SyntaxError{Pos: start, Token: src[start:min(j+1, len(src))], Msg: "malformed number: exponent without digits"}
		}
		for j < len(src) && isDigit(rune(src[j])) {
			j++
		}
		i = j
	}
	if i < len(src) {
		if r, w := utf8.DecodeRuneInString(src[i:]); isIdentPart(r) || r == '.' {
			return token{}, &SyntaxError{Pos: start, Token: src[start : i+w], Msg: "malformed number"}
		}
	}
	return token{kind: kind, pos: start, end: i, text: src[start:i]}, nil
}

// lexQuoted scans a 'string', a [delimited identifier] or a "quoted
// identifier" starting at i. The closing character written twice stands for
// itself.
func lexQuoted(src string, i int) (token, error) {
	open := src[i]
	closing, kind, what := open, tokDelim, "quoted identifier"
	switch open {
	case '\'':
		kind, what = tokString, "string"
	case '[':
		closing, what = ']', "delimited identifier"
	}
	escaped := false
	j := i + 1
	for j < len(src) {
		if src[j] != closing {
			j++
			continue
		}
		if j+1 < len(src) && src[j+1] == closing {
			escaped = true
			j += 2
			continue
		}
		break
	}
	if j >= len(src) {
		return token{}, &SyntaxError{Pos: i, Token: src[i:], Msg: "unterminated " + what}
	}
	text := src[i+1 : j]
	if escaped {
		text = unescapeQuoted(src[i+1:j], closing)
	}
	if kind == tokDelim && text == "" {
		return token{}, &SyntaxError{Pos: i, Token: src[i : j+1], Msg: "empty " + what}
	}
	return token{kind: kind, pos: i, end: j + 1, text: text}, nil
}

// unescapeQuoted replaces each doubled closing character in s by one.
func unescapeQuoted(s string, closing byte) string {
	c := string(closing)
	return strings.ReplaceAll(s, c+c, c)
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// isIdentPart reports whether r may follow the first letter of a regular
// identifier: a Unicode letter, a Unicode decimal digit or '_'.
func isIdentPart(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// isRegularIdent reports whether s can be written as a bare identifier:
// a letter, then letters, digits and underscores, and not a reserved word.
func isRegularIdent(s string) bool {
	if s == "" || isReserved(s) {
		return false
	}
	for i, r := range s {
		if r == utf8.RuneError {
			return false
		}
		if i == 0 && !unicode.IsLetter(r) || !isIdentPart(r) {
			return false
		}
	}
	return true
}

// isReserved reports whether s is a reserved word, in any case. Reserved
// words cannot be bare property names; write [and] or user.and instead.
func isReserved(s string) bool {
	switch strings.ToUpper(s) {
	case "AND", "OR", "NOT", "LIKE", "ESCAPE", "IN", "IS", "NULL", "EXISTS",
		"TRUE", "FALSE", "SET", "REMOVE":
		return true
	}
	return false
}
