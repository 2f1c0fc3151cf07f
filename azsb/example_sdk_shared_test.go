// Ported from the Azure SDK for Go (azservicebus v1.11.0,
// example_shared_test.go), Copyright (c) Microsoft Corporation, MIT
// License. Changed: the types of client, sender and receiver are azsb's,
// and ns, the namespace the examples' clients are built on, is added.

package azsb_test

import (
	"log"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/azsb"
)

// Helper functions to make the main examples compilable

func exitOnError(message string, err error) {
	// these errors/failures are expected since the example
	// code, at the moment, can't run.
	if err == nil {
		return
	}

	log.Panicf("(error in example): %s: %s", message, err.Error())
}

// these just make it so our examples don't have to have a bunch of extra declarations
// for unrelated entities.
var ns *minibus.Namespace

var client *azsb.Client
var sender *azsb.Sender
var receiver *azsb.Receiver

var messages []*azservicebus.ReceivedMessage
var err error
