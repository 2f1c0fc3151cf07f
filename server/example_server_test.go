package server_test

import (
	"fmt"
	"strings"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/server"
)

// Listen serves a namespace to the Azure SDKs; the connection string is
// what a client is given, unmodified:
// azservicebus.NewClientFromConnectionString(srv.ConnectionString(), nil).
func ExampleListen() {
	ns := minibus.NewNamespace()
	defer ns.Close()
	if _, err := ns.CreateQueue("orders", nil); err != nil {
		fmt.Println(err)
		return
	}
	srv, err := server.Listen(ns, "127.0.0.1:0", nil) // port 0: a free one
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	cs := srv.ConnectionString()
	fmt.Println(strings.HasPrefix(cs, "Endpoint=sb://127.0.0.1:"))
	fmt.Println(strings.HasSuffix(cs, ";UseDevelopmentEmulator=true;"))
	// Output:
	// true
	// true
}
