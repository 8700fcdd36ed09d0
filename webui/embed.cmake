# cmake -DIN=file -DOUT=file.gz -DGZIP=gzip -P embed.cmake: OUT is IN compressed (gzip -9, no name
# or time stamp, so the same input gives the same bytes), or an empty file when compression would
# save under a tenth (fonts are compressed already): the server then sends the file as it is.
get_filename_component(dir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${dir})
execute_process(COMMAND ${GZIP} -9 -n -c INPUT_FILE ${IN} OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip ${IN} failed: ${rc}")
endif()
file(SIZE ${IN} raw)
file(SIZE ${OUT}.tmp packed)
math(EXPR limit "${raw} * 9 / 10")
if(packed GREATER limit)
  file(WRITE ${OUT}.tmp "")
endif()
file(RENAME ${OUT}.tmp ${OUT})
