package hookwire.pii_test

import rego.v1

import data.hookwire.pii

at(point, text) := {"interception_point": point, "target": {"content": text, "role": "user"}}

rewritten(point, text) := t.value if {
	some t in pii.transform with input as at(point, text)
	t.path == "$target.content"
}

test_demo_request_redacted if {
	rewritten("input", "mail the report to jane.doe@example.com or call me at +1 415-555-0100.") == "mail the report to [email] or call me at [phone]."
}

test_output_redacted_too if {
	rewritten("output", "write to a.b@corp.example.org") == "write to [email]"
}

test_valid_card_redacted if {
	rewritten("input", "card 4111 1111 1111 1111 please") == "card [card] please"
	rewritten("input", "card 5500-0000-0000-0004") == "card [card]"
}

test_luhn_invalid_number_is_not_a_card if {
	# Fails the Luhn check, so it is not a card; with 16 digits it is still
	# a long number, which the phone rule redacts.
	not pii.luhn_valid("4111 1111 1111 1112")
	pii.luhn_valid("4111111111111111")
}

test_short_numbers_untouched if {
	count(pii.transform) == 0 with input as at("input", "build 1.2G in 3 dirs, call 555-0100")
}

test_labels_follow_redaction if {
	pii.labels == {"pii_redacted"} with input as at("input", "jane@example.com")
	count(pii.labels) == 0 with input as at("input", "nothing personal")
}

test_non_text_content_untouched if {
	count(pii.transform) == 0 with input as at("input", {"parts": ["jane@example.com"]})
}
