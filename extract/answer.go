package extract

import (
	"strings"
	"unicode"
)

// Answer kinds: what a question asks for, and what a text offers.
const (
	AnswerTime   = "time"
	AnswerPlace  = "place"
	AnswerPerson = "person"
	AnswerNumber = "number"
)

// QuestionKind is the kind of answer an English question asks for, from
// the question word it opens with (after and/so/but...): when → time, where → place, who/whom/whose →
// person, how many/much/long/often → number (how long and how often also
// time); "" when it says nothing (what, why, yes/no questions).
func QuestionKind(q string) string {
	ws := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) })
	for i, w := range ws[:min(len(ws), 2)] {
		if i == 1 && !leads[ws[0]] {
			break // a question word later is a statement's ("the meeting on where...")
		}
		switch w {
		case "when":
			return AnswerTime
		case "where":
			return AnswerPlace
		case "who", "whom", "whose":
			return AnswerPerson
		case "how":
			if i+1 < len(ws) {
				switch ws[i+1] {
				case "many", "much":
					return AnswerNumber
				case "long", "often":
					return AnswerTime
				}
			}
		case "what", "which":
			if i+1 < len(ws) {
				switch ws[i+1] {
				case "year", "month", "day", "date", "time":
					return AnswerTime
				case "city", "country", "place", "town":
					return AnswerPlace
				}
			}
		}
	}
	return ""
}

// leads may come before a question word ("so when did...").
var leads = map[string]bool{"and": true, "so": true, "but": true, "then": true, "ok": true, "okay": true, "hey": true, "also": true}

// relativeTime are words that place an event in time without a date.
var relativeTime = map[string]bool{
	"yesterday": true, "today": true, "tomorrow": true, "tonight": true, "ago": true, "weekend": true,
	"recently": true, "lately": true, "earlier": true, "later": true, "soon": true, "since": true,
	"week": true, "weeks": true, "month": true, "months": true, "year": true, "years": true,
	"morning": true, "evening": true, "afternoon": true, "night": true, "summer": true, "winter": true,
	"spring": true, "autumn": true, "fall": true, "christmas": true, "birthday": true,
}

var numberWords = map[string]bool{
	"one": true, "two": true, "three": true, "four": true, "five": true, "six": true, "seven": true,
	"eight": true, "nine": true, "ten": true, "eleven": true, "twelve": true, "twenty": true,
	"dozen": true, "hundred": true, "thousand": true, "million": true, "several": true, "couple": true,
	"once": true, "twice": true,
}

// Offers reports whether a text holds an answer of kind: a date or a
// relative time, a place (a known place, or a capitalised word after
// in/at/to/from), a person's name (a known first name), a number.
func Offers(text, kind string) bool {
	ws := tokenize(text)
	for i, w := range ws {
		switch kind {
		case AnswerTime:
			if relativeTime[w.lower] || isYear(w.lower) || isoDate.MatchString(w.text) || isMonthOrDay(w.lower) && capitalised(w) {
				return true
			}
		case AnswerPlace:
			if places[w.lower] && capitalised(w) || i > 0 && placeContext[ws[i-1].lower] && capitalised(w) && !firstNames[w.lower] {
				return true
			}
		case AnswerPerson:
			if firstNames[w.lower] && capitalised(w) {
				return true
			}
		case AnswerNumber:
			if numberWords[w.lower] || strings.IndexFunc(w.text, unicode.IsDigit) >= 0 {
				return true
			}
		}
	}
	return false
}
