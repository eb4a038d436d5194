# Run PROG --replay (through EMU, if set) and compare its output with GOLDEN (byte for byte).
# On a difference the output is left in OUT for inspection.
# EMU: CMAKE_CROSSCOMPILING_EMULATOR of a cross build, words joined by |.
string(REPLACE "|" ";" EMU "${EMU}")
execute_process(COMMAND ${EMU} ${PROG} --replay OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "reclaim --replay exited with ${rc}")
endif()
file(WRITE ${OUT} "${out}")
file(READ ${GOLDEN} golden)
if(NOT out STREQUAL golden)
  message(FATAL_ERROR "reclaim --replay differs from ${GOLDEN}; see ${OUT}")
endif()
message(STATUS "replay output matches ${GOLDEN}")
