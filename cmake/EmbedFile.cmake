# EmbedFile.cmake: turns a binary file into a C array, so libpreempt.so carries its device helpers.
# Usage: cmake -DINPUT=f.bc -DOUTPUT=f.inc -DSYMBOL=name -P EmbedFile.cmake
file(READ "${INPUT}" contents HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${contents}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}" "static const unsigned char ${SYMBOL}[] = {\n${bytes}\n};\n")
