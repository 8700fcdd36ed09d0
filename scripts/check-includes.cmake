# Checks that the sources of one layer include project headers only from the folders it may use
# (see ggufd_layer() in the top CMakeLists.txt). Run by the build as
#   cmake -DCONFIG=<layer file> -P scripts/check-includes.cmake
# where the layer file sets LAYER, ALLOWED (folders, each ending in '/'), FILES and STAMP.
# Fails, naming the file, the header and what the layer may use, when a source crosses a line.
include(${CONFIG})

# Sets `out` to TRUE when `path` starts with one of the folders in the list `dirs`.
function(under_any path dirs out)
  set(${out} FALSE PARENT_SCOPE)
  foreach(dir IN LISTS ${dirs})
    string(FIND "${path}" "${dir}" at)
    if(at EQUAL 0)
      set(${out} TRUE PARENT_SCOPE)
    endif()
  endforeach()
endfunction()

set(project_dirs gguf/ engine/ server/ tools/ config/ tests/ bench/)
set(errors "")
foreach(file IN LISTS FILES)
  file(STRINGS ${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*" "\\1" header "${line}")
    under_any("${header}" project_dirs in_project)
    if(NOT in_project)
      continue()  # a system header, or one next to the file (.inc)
    endif()
    under_any("${header}" ALLOWED allowed)
    if(NOT allowed)
      string(APPEND errors "\n  ${file} includes \"${header}\"")
    endif()
  endforeach()
endforeach()
if(errors)
  string(REPLACE ";" " " may_use "${ALLOWED}")
  message(FATAL_ERROR "layer '${LAYER}' crosses the module graph (docs/architecture.md):${errors}\n"
                      "'${LAYER}' may include only from: ${may_use}")
endif()
file(TOUCH ${STAMP})
