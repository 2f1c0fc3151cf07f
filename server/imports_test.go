package server

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportsStandOnThePublicAPI keeps the server on minibus's public API:
// its own files, and the codec's, import nothing of the engine (the
// server is a protocol layer over the exported calls, like any user).
func TestImportsStandOnThePublicAPI(t *testing.T) {
	allowed := map[string]bool{
		"github.com/minibus-go/minibus":               true,
		"github.com/minibus-go/minibus/internal/amqp": true,
		"github.com/benbjohnson/clock":                true,
	}
	for _, dir := range []string{".", "../internal/amqp"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			require.NoError(t, err)
			for _, imp := range parsed.Imports {
				p, err := strconv.Unquote(imp.Path.Value)
				require.NoError(t, err)
				std := !strings.Contains(strings.SplitN(p, "/", 2)[0], ".")
				if dir != "." {
					require.Truef(t, std, "%s imports %s: the codec stands on the standard library only", f, p)
					continue
				}
				require.Truef(t, std || allowed[p], "%s imports %s: the server stands on minibus's public API, its clock and the codec only", f, p)
			}
		}
	}
}
