package sqlfilter

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// likeRegexp is a reference implementation: the pattern as an anchored
// regular expression.
func likeRegexp(pattern, esc string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	for i := 0; i < len(pattern); {
		c := charAt(pattern, i)
		i += len(c)
		switch {
		case esc != "" && c == esc:
			lc := charAt(pattern, i)
			i += len(lc)
			b.WriteString(regexp.QuoteMeta(lc))
		case c == "%":
			b.WriteString(`.*`)
		case c == "_":
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(c))
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

func TestLikeShapes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, esc string
		shape        likeShape
		lit          string
	}{
		{"abc", "", likeExact, "abc"},
		{"", "", likeExact, ""},
		{"abc%", "", likePrefix, "abc"},
		{"abc%%", "", likePrefix, "abc"},
		{"%abc", "", likeSuffix, "abc"},
		{"%abc%", "", likeContains, "abc"},
		{"%", "", likeContains, ""},
		{"%%", "", likeContains, ""},
		{`ABC\%`, `\`, likeExact, "ABC%"},
		{`\%%`, `\`, likePrefix, "%"},
		{`%a%\%`, `\`, likeGeneral, ""},
		{`\\%`, `\`, likePrefix, `\`},
		{"a%b", "", likeGeneral, ""},
		{"a_", "", likeGeneral, ""},
		{"%%%a", "", likeSuffix, "a"},
	} {
		lp, err := compileLike(c.pattern, c.esc)
		require.NoError(t, err)
		require.Equal(t, c.shape, lp.shape, "pattern %q", c.pattern)
		if c.shape != likeGeneral {
			require.Equal(t, c.lit, lp.lit, "pattern %q", c.pattern)
		}
	}
}

// TestLikeAgainstRegexp compares the compiled and the general matcher with
// the regular-expression reference on random patterns and strings.
func TestLikeAgainstRegexp(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "%", "_", `\`, "é", "["}
	gen := func(n int) string {
		var b strings.Builder
		for range rng.IntN(n) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 20000 {
		pattern, s := gen(7), gen(8)
		esc := ""
		if rng.IntN(2) == 0 {
			esc = `\`
		}
		if validateLike(pattern, esc) != nil {
			_, err := compileLike(pattern, esc)
			require.ErrorIs(t, err, errTrailingEscape)
			continue
		}
		want := likeRegexp(pattern, esc).MatchString(s)
		lp, err := compileLike(pattern, esc)
		require.NoError(t, err)
		require.Equal(t, want, lp.match(s), "%q LIKE %q ESCAPE %q (shape %d)", s, pattern, esc, lp.shape)
		require.Equal(t, want, likeMatch(s, pattern, esc), "%q LIKE %q ESCAPE %q (general)", s, pattern, esc)
	}
}

func TestLikeInvalidUTF8(t *testing.T) {
	t.Parallel()
	require.True(t, likeMatch("a\xffb", "a_b", ""))
	require.True(t, likeMatch("a\xffb", "a\xffb", ""))
	require.False(t, likeMatch("a\xfeb", "a\xffb", ""), "distinct invalid bytes differ")
	require.True(t, likeMatch("\xff%", "\xff\xff\xff%", "\xff"), "an invalid byte as escape")
}
