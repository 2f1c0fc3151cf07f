// Package server serves a [minibus.Namespace] over AMQP 1.0 to the Azure
// Service Bus SDKs, unmodified: a drop-in for the official Service Bus
// emulator. A client is given the emulator's connection string with this
// server's address ([Server.ConnectionString]) and keeps its own code:
//
//	ns := minibus.NewNamespace()
//	srv, err := server.Listen(ns, "127.0.0.1:5672", nil)
//	...
//	client, err := azservicebus.NewClientFromConnectionString(srv.ConnectionString(), nil)
//
// The command minibus (cmd/minibus) wraps this package: `minibus serve`.
//
// # What is served
//
// Queues, topics and subscriptions with their dead-letter and transfer
// dead-letter sub-queues; sends (single and batched, scheduled by
// annotation), peek-lock and receive-and-delete receivers with link credit
// and drain, settlement on the link (complete, abandon, defer,
// dead-letter, release) and by lock token through $management after the
// link is gone; sessions (a named session or the next one) with their
// state; $cbs (every token is accepted); every $management operation the
// SDKs use (SEMANTICS W8), rule management included. The rules of the
// broker hold over the wire unchanged; SEMANTICS group W says how they are
// carried.
//
// Entities are created in Go through the namespace, or from the official
// emulator's Config.json with [ApplyConfig]. The emulator's quotas (50
// entities, 10 connections, 256 KB messages, TTL ≤ 1 h) are not enforced:
// nothing is limited but memory.
//
// # Time
//
// The namespace's clock is the broker's time (W9): with a mock clock, lock
// ends, expiries, scheduled messages and session-lock ends happen when the
// clock is moved, in-process or through the HTTP test-control API
// ([Options.Clock]), which answers once the namespace is idle. Keep-alives
// and com.microsoft:timeout are real time: they belong to the connection.
//
// # Clients
//
// What each SDK sends and expects, and what this server does about it:
//
//   - Go (azservicebus on go-amqp): SASL ANONYMOUS; a new session per $cbs
//     claim; replies routed by the reply link's target; the session filter
//     sent as a described value; late deliveries released (Released, which
//     does not count a delivery, SEMANTICS L15); batches (message-format
//     0x80013700) sized by the attach's max-message-size. Tested here end
//     to end.
//   - JavaScript (@azure/service-bus on rhea): SASL ANONYMOUS; the server's
//     AMQP header must wait for the client's after SASL; one long-lived
//     $cbs link pair whose receiver has no target and whose reply-to is the
//     link's name; a drain after every receive, answered at once; the
//     session filter as a plain string, echoed plain; the attach of a
//     session receiver must carry com.microsoft:locked-until-utc;
//     $management replies read statusCode. Tested here end to end.
//   - Python (pyamqp): link addresses as full URIs; put-token without
//     reply-to (the one reply link of the node answers); message-id an
//     integer, kept in its type in the correlation-id; full field lists on
//     open, begin and attach; abandon as modified with delivery-failed.
//     Built from its sources, not yet run here.
//   - .NET (Microsoft.Azure.Amqp): SASL MSSBCBS only; addresses with a
//     leading "/"; com.microsoft:timeout on every attach; status-code cast
//     to int32. Built from its sources, not yet run here.
//   - Java (proton-j): the same reply-to on every connection (replies are
//     routed within the connection); settle replies of the same outcome
//     type. Built from its sources, not yet run here.
//
// Not served: TLS (port 5671), WebSockets, transactions, the ATOM
// management API over HTTP, claims-based authorization (every token is
// accepted).
//
// # Concurrency
//
// Each connection has a goroutine that reads and handles its frames, one
// that writes them, and one per receiving link that waits for messages
// (the broker wakes it; nothing polls). [Server.Close] closes every
// connection and returns once none of them is left.
package server
