package snapshot

// MaxIdenticalRejections is how many refusals in a row, the same each
// time, the answers to a day's full-day request may meet before the
// request is given up.
const MaxIdenticalRejections = 2

// AnswerRefusal decides what a refused answer does to the live full-day
// request it answers. prev and prevCount are the refusal the day's answers
// met last and how many times in a row (0 and "" when none: the day's last
// request was answered, or an operator re-requested it); refusal is this
// answer's (reason code and detail, as Rejection.Error gives it). It
// returns the new count of identical refusals in a row, and giveUp when
// that count reaches MaxIdenticalRejections: asking again would only bring
// the same answer, refused the same way. Another refusal than the last
// starts the count again at one.
func AnswerRefusal(prev string, prevCount int, refusal string) (count int, giveUp bool) {
	count = 1
	if prevCount > 0 && prev == refusal {
		count = prevCount + 1
	}
	return count, count >= MaxIdenticalRejections
}
