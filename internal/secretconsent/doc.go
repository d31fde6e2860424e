// Package secretconsent decides whether a Secret's owner lets a FlightFeed
// use the Secret, and where its Kafka credentials may go: the rules of the
// annotations v1alpha1.FeedsAnnotation ("pek,pvg" or "*") and
// v1alpha1.BrokersAnnotation ("kafka-1.example:9093,kafka-2.example").
//
// Whoever may edit a FlightFeed is not necessarily who may read or write
// the Secrets of its namespace; these annotations are written by the
// latter, so a feed can neither borrow another feed's Secret nor send its
// SASL credentials to a host of its author's choosing.
//
// It is pure: no client, no I/O, no clock. The pump pods (package pumppod)
// apply it where they read a feed's Secrets, before any value is used;
// secretconsent_test.go holds the tables.
package secretconsent
