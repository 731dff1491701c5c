package extract

import "testing"

func TestQuestionKind(t *testing.T) {
	for q, want := range map[string]string{
		"When did Anna move to Berlin?":          AnswerTime,
		"when is the release":                    AnswerTime,
		"Where did she go hiking last weekend?":  AnswerPlace,
		"Who reviews the backend deploys?":       AnswerPerson,
		"Whose idea was the new queue?":          AnswerPerson,
		"How many dogs does Tom have?":           AnswerNumber,
		"How much did the repair cost?":          AnswerNumber,
		"How long has he been learning piano?":   AnswerTime,
		"What year did the project start?":       AnswerTime,
		"Which city hosts the conference?":       AnswerPlace,
		"What does Anna like to paint?":          "",
		"Why did the build fail?":                "",
		"Did Tom enjoy the trip?":                "",
		"":                                       "",
		"the meeting on where to put the server": "",
		"So when does the train leave?":          AnswerTime,
	} {
		t.Run(q, func(t *testing.T) {
			if got := QuestionKind(q); got != want {
				t.Errorf("QuestionKind(%q) = %q, want %q", q, got, want)
			}
		})
	}
}

func TestOffers(t *testing.T) {
	for _, c := range []struct {
		text, kind string
		want       bool
	}{
		{"We moved there last year.", AnswerTime, true},
		{"I saw it yesterday.", AnswerTime, true},
		{"The release is on Friday.", AnswerTime, true},
		{"It shipped on 2023-05-07.", AnswerTime, true},
		{"Back in 2019 it was different.", AnswerTime, true},
		{"I love painting sunsets.", AnswerTime, false},
		{"may I ask you something", AnswerTime, false},
		{"We went hiking in Yosemite.", AnswerPlace, true},
		{"She lives in Berlin now.", AnswerPlace, true},
		{"I went to the gym.", AnswerPlace, false},
		{"Sarah helped me move.", AnswerPerson, true},
		{"the build is green", AnswerPerson, false},
		{"We adopted three cats.", AnswerNumber, true},
		{"It cost 40 dollars.", AnswerNumber, true},
		{"It cost a lot.", AnswerNumber, false},
		{"anything", "", false},
	} {
		t.Run(c.kind+" "+c.text, func(t *testing.T) {
			if got := Offers(c.text, c.kind); got != c.want {
				t.Errorf("Offers(%q, %q) = %v, want %v", c.text, c.kind, got, c.want)
			}
		})
	}
}
