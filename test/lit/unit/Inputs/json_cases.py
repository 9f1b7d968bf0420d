# json_cases.py: reads test_json_text --cases and checks each line with python's json module, independently of the C.
# A valid string must come back as it was; an invalid one with one U+FFFD per byte python's own decoder refuses.
import codecs
import json
import sys


# Python reports each maximal ill-formed run at once ("\xe2\x82" cut short is one error of two bytes); the bytes after
# its first are all continuation bytes, so one U+FFFD per byte of the run is exactly one per byte not in a sequence.
def one_per_byte(error):
    return "\ufffd" * (error.end - error.start), error.end


codecs.register_error("one_per_byte", one_per_byte)

# Strict: a raw byte that is not UTF-8 in the output fails here, whatever the locale makes of sys.stdin.
text = sys.stdin.buffer.read().decode("utf-8")
valid = invalid = 0
for number, line in enumerate(text.splitlines(), 1):
    case = json.loads(line)  # strict too: a raw control character in a string is refused
    raw = bytes.fromhex(case["hex"])
    expected = raw.decode("utf-8", "one_per_byte")
    if case["json"] != expected:
        sys.exit(f"line {number}: read back {case['json']!r}, expected {expected!r}")
    try:
        raw.decode("utf-8")
        valid += 1
    except UnicodeDecodeError:
        invalid += 1
print(f"{valid + invalid} cases: {valid} valid read back unchanged, {invalid} invalid with one U+FFFD per bad byte")
