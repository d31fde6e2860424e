package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels every FlightFeedDay carries, so `kubectl get flightfeeddays -l
// flightfeed.aero/feed=pek` lists one feed's days.
const (
	// LabelFeed holds the name of the owning FlightFeed.
	LabelFeed = "flightfeed.aero/feed"
	// LabelDay holds the operation day, YYYY-MM-DD.
	LabelDay = "flightfeed.aero/day"
)

// FlightFeedDaySpec identifies the day; it never changes after creation.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a FlightFeedDay names one feed and one day"
type FlightFeedDaySpec struct {
	// FeedName is the FlightFeed (same namespace) whose ledger this day is.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	FeedName string `json:"feedName"`

	// Day is the operation day, YYYY-MM-DD (airport-local).
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`
	Day string `json:"day"`
}

// FlightFeedDayStatus mirrors the day's row of the snapshot ledger.
type FlightFeedDayStatus struct {
	// Version is the day's snapshot generation: it rises by one with every
	// committed full-day snapshot of the day.
	// +optional
	Version int64 `json:"version,omitempty"`

	// LastMessageID is the mailbox row id (CMINMSGS_ID) of that snapshot.
	// +optional
	LastMessageID int64 `json:"lastMessageId,omitempty"`

	// Flights is the size of the day's roster.
	// +optional
	Flights int64 `json:"flights,omitempty"`

	// LastCommitAt is when the day's last snapshot committed.
	// +optional
	LastCommitAt *metav1.Time `json:"lastCommitAt,omitempty"`

	// Verification is the day's last verification (`kubectl flightfeed
	// verify NAME --day D`): the day rebuilt from its archived messages and
	// compared with what the feed serves. Absent when none ran.
	// +optional
	Verification *DayVerification `json:"verification,omitempty"`
}

// DayVerification is what the last verification of a day found.
type DayVerification struct {
	// Outcome is IDENTICAL (every flight and the ledger equal their
	// rebuild), DIFFERS, or NOT_VERIFIABLE (the archive cannot rebuild the
	// day; Reason says why).
	// +kubebuilder:validation:Enum=IDENTICAL;DIFFERS;NOT_VERIFIABLE
	Outcome string `json:"outcome"`

	// Flights counts the day's flights served.
	// +optional
	Flights int64 `json:"flights,omitempty"`
	// Differing counts the flights that differ from the rebuild.
	// +optional
	Differing int64 `json:"differing,omitempty"`
	// Messages counts the archived messages replayed.
	// +optional
	Messages int64 `json:"messages,omitempty"`

	// Reason says why the day is NOT_VERIFIABLE, or what beside flights
	// differs.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`

	// FinishedAt is when the verification ended.
	FinishedAt metav1.Time `json:"finishedAt"`

	// RanBy says who ran it: "cli", or "api" and the read API's user.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	RanBy string `json:"ranBy,omitempty"`
}

// FlightFeedDay is a read-only mirror of one operation day of a FlightFeed's
// snapshot ledger. The replica that leads the feed creates, updates and
// removes these (with the ledger's retention); users only read them.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ffday,categories=aodb
// +kubebuilder:printcolumn:name="Day",type=string,JSONPath=`.spec.day`
// +kubebuilder:printcolumn:name="Version",type=integer,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Flights",type=integer,JSONPath=`.status.flights`
// +kubebuilder:printcolumn:name="Last-Message",type=integer,JSONPath=`.status.lastMessageId`
// +kubebuilder:printcolumn:name="Committed",type=date,JSONPath=`.status.lastCommitAt`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Feed",type=string,priority=1,JSONPath=`.spec.feedName`
// +kubebuilder:printcolumn:name="Verified",type=string,JSONPath=`.status.verification.outcome`,priority=1
// +kubebuilder:printcolumn:name="Verified-At",type=date,JSONPath=`.status.verification.finishedAt`,priority=1
type FlightFeedDay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlightFeedDaySpec   `json:"spec"`
	Status FlightFeedDayStatus `json:"status,omitempty"`
}

// FlightFeedDayList is a list of FlightFeedDays.
//
// +kubebuilder:object:root=true
type FlightFeedDayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlightFeedDay `json:"items"`
}
