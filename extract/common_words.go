package extract

import "strings"

//go:generate go run ./gen -n 3000 -o common.go

// common holds commonWords (common.go, generated from the word-vector
// table's vocabulary): the most frequent English words, lower case.
var common = func() map[string]bool {
	m := make(map[string]bool, len(commonWords))
	for _, w := range commonWords {
		m[w] = true
	}
	return m
}()

// peoples are the names of languages, nationalities and faiths that are
// also frequent words once lower-cased (the vocabulary is uncased): in
// English they are always capitalised, names however common.
var peoples = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`
		african albanian american arab arabic argentine argentinian armenian asian australian austrian
		belgian bengali brazilian british buddhist bulgarian burmese canadian cantonese catholic celtic
		chilean chinese christian colombian croatian cuban czech danish dutch egyptian english ethiopian
		european filipino finnish french gaelic german greek hawaiian hebrew hindi hindu hungarian
		icelandic indian indonesian iranian iraqi irish islamic israeli italian jamaican japanese jewish
		kenyan korean kurdish latin latino lebanese malay mandarin mexican mongolian moroccan muslim
		nigerian norwegian pakistani palestinian persian peruvian polish portuguese protestant punjabi
		roman romanian russian saudi scottish serbian somali spanish sudanese swahili swedish swiss syrian
		taiwanese tamil thai tibetan turkish ukrainian urdu venezuelan vietnamese welsh yiddish`) {
		peoples[w] = true
	}
}

// commonWord reports a word written with a capital that is one of the
// most frequent English words ("Game", "Host", "Run"), no language's or
// people's name.
func commonWord(lower string) bool {
	return common[lower] && !peoples[lower]
}

// gerundSet holds gerunds (common.go): the words made from a verb by
// -ing ("Hardening", "Mining"; not "Thanksgiving" or "Wyoming").
var gerundSet = func() map[string]bool {
	m := make(map[string]bool, len(gerunds))
	for _, w := range gerunds {
		m[w] = true
	}
	return m
}()

// verbalNoun reports a noun made from a verb: a gerund, or a word ending
// in -tion or -sion with three letters or more before it
// ("Deduplication"); alone, a heading's or a section's name, no name.
func verbalNoun(lower string) bool {
	if gerundSet[lower] {
		return true
	}
	for _, s := range []string{"tion", "sion"} {
		if strings.HasSuffix(lower, s) && len(lower)-len(s) >= 3 {
			return true
		}
	}
	return false
}
