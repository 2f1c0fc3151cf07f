package sqlfilter

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// LIKE patterns: '%' matches any run of characters (also none), '_' exactly
// one character; every other character, '[' included, matches itself. With
// an escape character, the escape followed by any character matches that
// character literally ('\%' is a percent sign, '\\' a backslash). A pattern
// ending in a lone escape character is an error. Characters are Unicode code
// points; a byte that is not valid UTF-8 counts as one character and matches
// only itself.

// errTrailingEscape is reported for a pattern that ends with its escape
// character.
var errTrailingEscape = errors.New("LIKE pattern ends with the escape character")

// likeShape is the form of a compiled pattern without '_' and with '%' only
// at the ends, which a string function can match directly.
type likeShape uint8

const (
	likeGeneral  likeShape = iota // anything else: run likeMatch
	likeExact                     // 'lit'
	likePrefix                    // 'lit%'
	likeSuffix                    // '%lit'
	likeContains                  // '%lit%' (and '%': lit is "")
)

// likePattern is a constant pattern compiled when the expression is parsed.
type likePattern struct {
	shape   likeShape
	lit     string // the literal for the non-general shapes
	pattern string // the pattern as given, for likeGeneral
	esc     string // the escape character, "" for none
}

// compileLike validates pattern and picks the fastest way to match it.
func compileLike(pattern, esc string) (likePattern, error) {
	lp := likePattern{shape: likeGeneral, pattern: pattern, esc: esc}
	if err := validateLike(pattern, esc); err != nil {
		return lp, err
	}
	// Split into literal runs and '%' runs; any '_' means general.
	var lits []string
	var b strings.Builder
	leading, trailing, inner := false, false, false
	for i := 0; i < len(pattern); {
		c := charAt(pattern, i)
		i += len(c)
		wildcard := true
		if esc != "" && c == esc {
			c = charAt(pattern, i) // the escaped character, taken literally
			i += len(c)
			wildcard = false
		}
		switch {
		case wildcard && c == "_":
			return lp, nil
		case wildcard && c == "%":
			if b.Len() > 0 {
				lits = append(lits, b.String())
				b.Reset()
			}
			if len(lits) == 0 {
				leading = true
			} else {
				trailing = true
			}
		default:
			if trailing {
				inner = true // a literal after a '%' that followed a literal
			}
			b.WriteString(c)
		}
	}
	if b.Len() > 0 {
		lits = append(lits, b.String())
		trailing = false
	}
	if inner || len(lits) > 1 {
		return lp, nil
	}
	lit := ""
	if len(lits) == 1 {
		lit = lits[0]
	}
	switch {
	case leading && trailing, leading && lit == "":
		lp.shape = likeContains
	case leading:
		lp.shape = likeSuffix
	case trailing:
		lp.shape = likePrefix
	default:
		lp.shape = likeExact
	}
	lp.lit = lit
	return lp, nil
}

// match reports whether s matches the compiled pattern.
func (lp *likePattern) match(s string) bool {
	switch lp.shape {
	case likeExact:
		return s == lp.lit
	case likePrefix:
		return strings.HasPrefix(s, lp.lit)
	case likeSuffix:
		return strings.HasSuffix(s, lp.lit)
	case likeContains:
		return strings.Contains(s, lp.lit)
	}
	return likeMatch(s, lp.pattern, lp.esc)
}

// validateLike checks that every escape character in pattern is followed by
// a character.
func validateLike(pattern, esc string) error {
	if esc == "" {
		return nil
	}
	for i := 0; i < len(pattern); {
		c := charAt(pattern, i)
		i += len(c)
		if c == esc {
			if i >= len(pattern) {
				return errTrailingEscape
			}
			i += len(charAt(pattern, i))
		}
	}
	return nil
}

// likeMatch reports whether s matches pattern, which validateLike accepted.
// It backtracks only to the last '%', so it runs in O(len(s)*len(pattern))
// at worst and does not allocate.
func likeMatch(s, pattern, esc string) bool {
	si, pi := 0, 0
	starP, starS := -1, 0
	for {
		if pi < len(pattern) {
			c := charAt(pattern, pi)
			switch {
			case esc != "" && c == esc:
				lc := charAt(pattern, pi+len(c))
				if si < len(s) && charAt(s, si) == lc {
					si += len(lc)
					pi += len(c) + len(lc)
					continue
				}
			case c == "%":
				pi += len(c)
				starP, starS = pi, si
				continue
			case c == "_":
				if si < len(s) {
					si += len(charAt(s, si))
					pi += len(c)
					continue
				}
			default:
				if si < len(s) && charAt(s, si) == c {
					si += len(c)
					pi += len(c)
					continue
				}
			}
		} else if si == len(s) {
			return true
		}
		// Mismatch: let the last '%' swallow one more character.
		if starP < 0 || starS >= len(s) {
			return false
		}
		starS += len(charAt(s, starS))
		si, pi = starS, starP
	}
}

// charAt returns the character (UTF-8 sequence, or one invalid byte) that
// starts at byte i of s, or "" at the end.
func charAt(s string, i int) string {
	if i >= len(s) {
		return ""
	}
	if s[i] < utf8.RuneSelf {
		return s[i : i+1]
	}
	_, w := utf8.DecodeRuneInString(s[i:])
	return s[i : i+w]
}
