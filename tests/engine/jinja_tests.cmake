# GoogleTest sources of the chat-template interpreter, relative to tests/. Included by
# tests/CMakeLists.txt; they link gtest_main, nlohmann_json and the `engine` library and read
# ../shared/templates through the GGUFD_SHARED_DIR compile definition (skipping without it).
set(GGUFD_JINJA_TESTS
  engine/chat_template_test.cpp
  engine/jinja_test.cpp
)
