# Personal data redaction: rewrite e-mail addresses, phone numbers and
# payment card numbers (Luhn-checked) in the text of the input and of the
# final output, with a transform of $target.content.
package hookwire.pii

import rego.v1

points := {"input", "output"}

email_pattern := `[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`

# 13 to 19 digits, optionally grouped by spaces or dashes.
card_pattern := `\b\d(?:[ -]?\d){12,18}\b`

# A digit run of 9 or more digits with spaces, dashes, dots or parentheses.
phone_pattern := `\+?\(?\d[\d\s().-]{7,}\d`

digits_of(s) := [to_number(c) | some c in split(regex.replace(s, `\D`, ""), "")]

# Luhn: from the right, every second digit doubled (minus 9 above 9).
luhn_value(d, position) := d if position % 2 == 0

luhn_value(d, position) := d * 2 if {
	position % 2 == 1
	d * 2 <= 9
}

luhn_value(d, position) := (d * 2) - 9 if {
	position % 2 == 1
	d * 2 > 9
}

luhn_valid(number) if {
	digits := digits_of(number)
	n := count(digits)
	n >= 13
	n <= 19
	total := sum([luhn_value(digits[i], (n - 1) - i) | some i in numbers.range(0, n - 1)])
	total % 10 == 0
}

redact(text) := phones_redacted if {
	cards := {m: "[card]" | some m in regex.find_n(card_pattern, text, -1); luhn_valid(m)}
	cards_redacted := strings.replace_n(cards, text)
	emails_redacted := regex.replace(cards_redacted, email_pattern, "[email]")
	phones := {m: "[phone]" |
		some m in regex.find_n(phone_pattern, emails_redacted, -1)
		count(digits_of(m)) >= 9
	}
	phones_redacted := strings.replace_n(phones, emails_redacted)
}

content := input.target.content

redacted := redact(content) if is_string(content)

changed if redacted != content

transform contains {"path": "$target.content", "value": redacted} if changed

labels contains "pii_redacted" if changed
