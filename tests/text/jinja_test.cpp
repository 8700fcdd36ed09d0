// The Jinja2 subset behind engine::ChatTemplate, feature by feature. Expected outputs are what
// Python's jinja2 (as configured by Hugging Face) renders, except where a comment says otherwise.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/text/chat_template.h"

namespace {

using engine::ChatInput;
using engine::ChatTemplate;
using engine::ChatTemplateOptions;
using engine::TemplateError;
using engine::TemplateRaise;
using engine::jinja::Value;

std::string render(std::string_view source, Value variables = Value::object()) {
  ChatInput input;
  input.extra_variables = std::move(variables);
  return ChatTemplate::parse(source).render(input);
}

// Renders without HF's trim_blocks/lstrip_blocks, to see raw whitespace handling.
std::string render_plain(std::string_view source) {
  ChatTemplateOptions options;
  options.trim_blocks = false;
  options.lstrip_blocks = false;
  return ChatTemplate::parse(source, options).render({});
}

// The message of the TemplateError that parsing or rendering throws ("" if none).
std::string error_of(std::string_view source, Value variables = Value::object()) {
  try {
    render(source, std::move(variables));
  } catch (const TemplateError& e) {
    return e.message();
  }
  return "";
}

Value messages() {
  return Value::array({Value::object({{"role", "user"}, {"content", "hi"}}),
                       Value::object({{"role", "assistant"}, {"content", "yo"}})});
}

// ---- Literals and printing -----------------------------------------------------------------

TEST(JinjaLiterals, StringsWithEscapes) {
  EXPECT_EQ(render(R"({{ 'a\x41\u00e9\n\t\\\'' }})"), "aAé\n\t\\'");
  EXPECT_EQ(render(R"({{ "say \"hi\"" }})"), "say \"hi\"");
  EXPECT_EQ(render(R"({{ 'keep \d unknown' }})"), "keep \\d unknown");
  EXPECT_EQ(render(R"({{ "a" 'b' "c" }})"), "abc");
}

TEST(JinjaLiterals, NumbersPrintLikePython) {
  EXPECT_EQ(render("{{ 42 }} {{ -7 }} {{ 1_000 }} {{ 0x1F }} {{ 0b101 }} {{ 0o17 }}"),
            "42 -7 1000 31 5 15");
  EXPECT_EQ(render("{{ 1.0 }} {{ 1.5e3 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e15 }} {{ 0.00001 }}"),
            "1.0 1500.0 0.30000000000000004 1e+16 1000000000000000.0 1e-05");
  EXPECT_EQ(render("{{ 1e300 * 1e10 }} {{ -0.0 }} {{ 1/3 }}"), "inf -0.0 0.3333333333333333");
}

TEST(JinjaLiterals, ConstantsAndContainersPrintAsPythonRepr) {
  EXPECT_EQ(render("{{ true }} {{ False }} {{ none }} {{ None }}"), "True False None None");
  EXPECT_EQ(render("{{ [1, 'a', none, true, 1.5, {'k': [2]}] }}"),
            "[1, 'a', None, True, 1.5, {'k': [2]}]");
  EXPECT_EQ(render("{{ (1, 2) }} {{ (1,) }} {{ () }} {{ [] }} {{ {} }}"), "(1, 2) (1,) () [] {}");
  EXPECT_EQ(render(R"({{ ["it's", 'a"b', 'x\ny'] }})"), R"(["it's", 'a"b', 'x\ny'])");
}

// ---- Operators -----------------------------------------------------------------------------

TEST(JinjaOperators, Arithmetic) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 / 2 }} {{ 4 / 2 }} {{ 7 // 2 }}"),
            "7 9 3.5 2.0 3");
  EXPECT_EQ(render("{{ -7 // 2 }} {{ -7 % 3 }} {{ 5 % -3 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}"),
            "-4 2 -1 3.0 0.5");
  EXPECT_EQ(render("{{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }} {{ -3 ** 2 }}"),
            "1024 0.5 64 9");  // ** is left-associative and binds looser than unary -, as in Jinja
  EXPECT_EQ(render("{{ true + 1 }} {{ 1 + 1.5 }}"), "2 2.5");
}

TEST(JinjaOperators, ConcatenationAndRepetition) {
  EXPECT_EQ(render("{{ 'a' + 'b' }} {{ 'a' ~ 1 ~ none ~ true }} {{ [1] + [2] }}"),
            "ab a1NoneTrue [1, 2]");
  EXPECT_EQ(render("{{ 'ab' * 2 }} {{ 3 * 'x' }} {{ [0] * 3 }} [{{ 'x' * 0 }}]"),
            "abab xxx [0, 0, 0] []");
  EXPECT_EQ(render("{{ '%s-%d' % ('a', 3) }} {{ '%05.1f' % 3.14159 }}"), "a-3 003.1");
}

TEST(JinjaOperators, TypeErrorsAreReported) {
  EXPECT_EQ(error_of("{{ 'a' + 1 }}"), "can only concatenate str (not \"int\") to str");
  EXPECT_EQ(error_of("{{ 1 + 'a' }}"), "unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(error_of("{{ 1 / 0 }}"), "division by zero");
  EXPECT_EQ(error_of("{{ 1 // 0 }}"), "integer division or modulo by zero");
  EXPECT_EQ(error_of("{{ 9223372036854775807 + 1 }}"), "integer overflow (result exceeds 64 bits)");
  EXPECT_EQ(error_of("{{ 2 ** 64 }}"), "integer overflow (result exceeds 64 bits)");
  EXPECT_EQ(error_of("{{ 1 < 'a' }}"), "'<' not supported between instances of 'int' and 'str'");
}

TEST(JinjaOperators, ComparisonsAndLogic) {
  EXPECT_EQ(
      render("{{ 1 == 1.0 }} {{ true == 1 }} {{ [1, 2] == [1, 2] }} {{ {'a': 1} == {'a': 1} }}"),
      "True True True True");
  EXPECT_EQ(render("{{ (1, 2) == [1, 2] }} {{ none == none }} {{ 'a' != 'b' }}"),
            "False True True");
  EXPECT_EQ(render("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ [1, 2] < [1, 3] }} {{ 'a' < 'b' }}"),
            "True False True True");
  EXPECT_EQ(render("{{ 0 or 'x' }} {{ 'y' and 0 }} {{ none or [] }} {{ not 1 == 2 }}"),
            "x 0 [] True");
  EXPECT_EQ(
      render("{{ 'a' in 'cat' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }}"),
      "True True True True");
}

TEST(JinjaOperators, ConditionalExpression) {
  EXPECT_EQ(render("{{ 'y' if true else 'n' }}|{{ 'a' if false else 'b' if false else 'c' }}"),
            "y|c");
  EXPECT_EQ(render("[{{ 1 if false }}]{{ (1 if false) is defined }}"), "[]False");
}

// ---- Lookup and slices ---------------------------------------------------------------------

TEST(JinjaLookup, AttributesItemsAndMethods) {
  const Value vars = Value::object({{"d", Value::object({{"items", 7}, {"name", "n"}})}});
  EXPECT_EQ(render("{{ d.name }} {{ d['name'] }} {{ d['items'] }} {{ d.items()|list }}", vars),
            "n n 7 [('items', 7), ('name', 'n')]");
  EXPECT_EQ(render("{{ [1, 2, 3][-1] }} {{ [1, 2].0 }} [{{ [1][5] }}] {{ 'héllo'[1] }}"),
            "3 1 [] é");
  EXPECT_EQ(render("{{ {'a': {'b': 2}}['a']['b'] }} {{ {'a': {'b': 2}}.a.b }}"), "2 2");
}

TEST(JinjaLookup, Slices) {
  EXPECT_EQ(render("{{ [1, 2, 3][::-1] }} {{ [1, 2, 3, 4, 5][1:4:2] }} {{ [1, 2, 3][-2:] }}"),
            "[3, 2, 1] [2, 4] [2, 3]");
  EXPECT_EQ(render("{{ [1, 2, 3, 4][3:0:-1] }} {{ [1, 2, 3][5:] }} {{ [1, 2, 3, 4][-100:100] }}"),
            "[4, 3, 2] [] [1, 2, 3, 4]");
  EXPECT_EQ(render("{{ 'abcdef'[::-2] }} {{ 'héllo'[1:3] }} {{ 'abc'[:-1] }} {{ (1, 2, 3)[1:] }}"),
            "fdb él ab (2, 3)");
  EXPECT_EQ(error_of("{{ [1][::0] }}"), "slice step cannot be zero");
}

// ---- Undefined -----------------------------------------------------------------------------

TEST(JinjaUndefined, RendersEmptyAndIsFalsy) {
  EXPECT_EQ(render("[{{ missing }}]{{ missing is defined }}{{ missing is undefined }}"),
            "[]FalseTrue");
  EXPECT_EQ(render("{% if missing %}yes{% else %}no{% endif %}{% for x in missing %}x{% endfor %}"),
            "no");
  EXPECT_EQ(render("{{ missing|length }} {{ missing|default('d') }} [{{ missing ~ 'x' }}]"),
            "0 d [x]");
}

// What tool-use templates ask of an absent `tools` (a request without tools), as Jinja2 answers.
TEST(JinjaUndefined, TestsAndFiltersAnswerAsJinja2) {
  EXPECT_EQ(render("{{ missing is iterable }} {{ missing is sequence }} {{ missing is mapping }} "
                   "{{ missing is string }} {{ missing is none }} {{ missing == none }} "
                   "{{ missing != none }} {{ not missing }}"),
            "True True False False False False True True");
  EXPECT_EQ(render("{{ missing|list }} {{ missing|count }} [{{ missing|string }}] "
                   "{{ missing|default([])|length }} {{ (missing or [])|length }} "
                   "{{ missing is iterable and missing|length > 0 }} "
                   "{{ missing|first is defined }}"),
            "[] 0 [] 0 0 False False");
}

TEST(JinjaUndefined, AttributeOfUndefinedIsUndefined) {
  // Lenient like Jinja's ChainableUndefined: x.y.z of a missing x is undefined, not an error.
  EXPECT_EQ(render("[{{ missing.a.b }}]{{ missing.a['b'] is defined }}{{ {}.x.y is defined }}"),
            "[]FalseFalse");
}

TEST(JinjaUndefined, MisuseIsAnError) {
  EXPECT_EQ(error_of("{{ missing() }}"), "'missing' is undefined");
  EXPECT_EQ(error_of("{{ missing + 1 }}"), "'missing' is undefined");
  EXPECT_EQ(error_of("{{ {}.nope.strip() }}"), "'dict object' has no attribute 'nope'");
  EXPECT_EQ(error_of("{{ none() }}"), "'NoneType' object is not callable");
  EXPECT_EQ(error_of("{% for x in none %}{% endfor %}"), "'NoneType' object is not iterable");
  EXPECT_EQ(error_of("{{ none|length }}"), "object of type 'NoneType' has no len()");
}

// ---- Methods -------------------------------------------------------------------------------

TEST(JinjaMethods, StringMethods) {
  EXPECT_EQ(render("{{ ' x '.strip() }}|{{ 'xyx'.strip('x') }}|{{ '  x'.lstrip() }}|{{ "
                   "'x\n\n'.rstrip('\n') }}|"),
            "x|y|x|x|");
  EXPECT_EQ(
      render("{{ 'a b  c'.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }}"),
      "['a', 'b', 'c'] ['a', 'b,c'] ['a,b', 'c']");
  EXPECT_EQ(render("{{ 'x</think>y'.split('</think>')[-1] }} {{ 'a\nb\r\nc'.splitlines() }}"),
            "y ['a', 'b', 'c']");
  EXPECT_EQ(render("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'Ab'.upper() "
                   "}} {{ 'Ab'.lower() }}"),
            "True True AB ab");
  EXPECT_EQ(render("{{ 'hello world'.title() }} {{ 'hELLo'.capitalize() }} {{ 'a-b-c'.replace('-', "
                   "'+', 1) }}"),
            "Hello World Hello a+b-c");
  EXPECT_EQ(render("{{ 'héllo'.find('l') }} {{ 'abc'.find('z') }} {{ 'aXbX'.count('X') }} {{ ', "
                   "'.join(['a', 'b']) }}"),
            "2 -1 2 a, b");
  EXPECT_EQ(render("{{ '{}-{}'.format(1, 'b') }} {{ '{0}{1}{0}'.format('x', 'y') }} {{ "
                   "'{n}!'.format(n=3) }}"),
            "1-b xyx 3!");
  EXPECT_EQ(
      render("{{ '42'.isdigit() }} {{ 'ab'.isalpha() }} {{ ' '.isspace() }} {{ 'x'.zfill(3) }}"),
      "True True True 00x");
}

TEST(JinjaMethods, DictAndListMethods) {
  EXPECT_EQ(render("{{ {'a': 1}.get('a') }} {{ {'a': 1}.get('b') }} {{ {'a': 1}.get('b', 2) }}"),
            "1 None 2");
  EXPECT_EQ(render("{{ {'a': 1, 'b': 2}.keys()|list }} {{ {'a': 1, 'b': 2}.values()|list }} {{ "
                   "{'a': 1}.items()|list }}"),
            "['a', 'b'] [1, 2] [('a', 1)]");
  EXPECT_EQ(render("{% set l = [] %}{{ l.append(1) }}{{ l }}{% set _ = l.extend([2, 3]) %}{{ l }}"
                   "{{ l.pop() }}{{ l }}{% set _ = l.insert(0, 9) %}{{ l }}{{ l.index(9) }}"),
            "None[1][1, 2, 3]3[1, 2][9, 1, 2]0");
  EXPECT_EQ(
      render("{% set d = {} %}{% set _ = d.update({'a': 1}) %}{{ d }}{{ d.setdefault('b', 2) }}"
             "{{ d }}{{ d.pop('a') }}{{ d }}"),
      "{'a': 1}2{'a': 1, 'b': 2}1{'b': 2}");
}

TEST(JinjaMethods, TemplateInputIsReadOnly) {
  const Value vars = Value::object({{"xs", Value::array({1, 2})}});
  EXPECT_NE(error_of("{% set _ = xs.append(3) %}", vars).find("cannot modify"), std::string::npos);
  EXPECT_EQ(render("{% set ys = xs|list %}{% set _ = ys.append(3) %}{{ ys }}{{ xs }}", vars),
            "[1, 2, 3][1, 2]");
  EXPECT_EQ(error_of("{% set t = (1, 2) %}{{ t.append(3) }}"),
            "'tuple' object has no attribute 'append'");
}

// ---- Filters -------------------------------------------------------------------------------

TEST(JinjaFilters, ToJsonMatchesPythonJsonDumps) {
  EXPECT_EQ(render(R"({{ {'b': none, 'a': [true, 1.5, 'é"\n']}|tojson }})"),
            R"({"b": null, "a": [true, 1.5, "é\"\n"]})");  // keys keep their order
  EXPECT_EQ(
      render("{{ {'a': 1, 'b': {'c': [1, 2]}, 'e': []}|tojson(indent=2) }}"),
      "{\n  \"a\": 1,\n  \"b\": {\n    \"c\": [\n      1,\n      2\n    ]\n  },\n  \"e\": []\n}");
  EXPECT_EQ(render("{{ 'x'|tojson }} {{ (1, 2)|tojson }} {{ 1e100|tojson }} {{ {'é': "
                   "1}|tojson(ensure_ascii=true) }}"),
            R"("x" [1, 2] 1e+100 {"\u00e9": 1})");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|tojson(sort_keys=true, separators=(',', ':')) }}"),
            R"({"a":2,"b":1})");
  EXPECT_EQ(error_of("{{ missing|tojson }}"), "Object of type Undefined is not JSON serializable");
}

TEST(JinjaFilters, Strings) {
  EXPECT_EQ(
      render("{{ '  x  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ 'Hello'|lower }}|{{ 'héllo'|upper }}"),
      "x|a|hello|HÉLLO");
  EXPECT_EQ(
      render("{{ 'hello world'|title }} {{ 'hELLo'|capitalize }} {{ 'ab'|replace('a', 'x') }}"),
      "Hello World Hello xb");
  EXPECT_EQ(render("{{ '<a href=\"x\">&</a>'|escape }} {{ '<b>'|e }} {{ '<b>'|safe }}"),
            "&lt;a href=&#34;x&#34;&gt;&amp;&lt;/a&gt; &lt;b&gt; <b>");
  EXPECT_EQ(
      render("{{ 5|string }} {{ [1, 'a']|string }} {{ none|string }} {{ '%s=%d'|format('a', 1) }}"),
      "5 [1, 'a'] None a=1");
}

TEST(JinjaFilters, Indent) {
  EXPECT_EQ(render("{{ 'a\nb\n\nc'|indent(2) }}|{{ 'a\nb'|indent(2, true) }}|{{ 'a\n\nb'|indent(2, "
                   "blank=true) }}"),
            "a\n  b\n\n  c|  a\n  b|a\n  \n  b");
  EXPECT_EQ(render("{{ 'a\nb'|indent }}|{{ 'a\nb'|indent('> ') }}"), "a\n    b|a\n> b");
}

TEST(JinjaFilters, NumbersAndConversions) {
  EXPECT_EQ(render("{{ 3.7|int }} {{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ "
                   "'0x1A'|int(0, 16) }}"),
            "3 42 4 0 7 26");
  EXPECT_EQ(render("{{ '3'|float }} {{ 'x'|float }} {{ 2|float }} {{ -5|abs }} {{ -2.5|abs }}"),
            "3.0 0.0 2.0 5 2.5");
  EXPECT_EQ(render("{{ 10|round }} {{ 2.5|round }} {{ 3.14159|round(2) }} {{ 2.1|round(0, 'ceil') "
                   "}} {{ 2.9|round(0, 'floor') }}"),
            "10 2.0 3.14 3.0 2.0");
}

TEST(JinjaFilters, Sequences) {
  EXPECT_EQ(render("{{ [1, 2, 3]|length }} {{ 'héllo'|count }} {{ {'a': 1}|length }} {{ [1, 2, "
                   "3]|first }} {{ [1, 2, 3]|last }}"),
            "3 5 1 1 3");
  EXPECT_EQ(render("{{ 'abc'|first }} {{ 'abc'|last }} {{ 'abc'|list }} {{ {'a': 1, 'b': 2}|list "
                   "}} {{ [1, 2]|reverse|list }} {{ 'ab'|reverse }}"),
            "a c ['a', 'b', 'c'] ['a', 'b'] [2, 1] ba");
  EXPECT_EQ(render("{{ [1, 2, 3]|join('-') }} {{ [{'a': 1}, {'a': 2}]|join(',', attribute='a') }} "
                   "{{ ['a', 'b']|join }}"),
            "1-2-3 1,2 ab");
  EXPECT_EQ(
      render("{{ {'a': 1}|items|list }} {{ missing|items|list }} {{ {'b': 1, 'a': 2}|dictsort }}"),
      "[('a', 1)] [] [('a', 2), ('b', 1)]");
  EXPECT_EQ(render("{{ ['a', 'A', 'b']|unique|list }} {{ [1, 2, 1, 1.0]|unique|list }}"),
            "['a', 'b'] [1, 2]");
  EXPECT_EQ(
      render("{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort }} {{ [3, 1, 2]|sort(reverse=true) }}"),
      "[1, 2, 3] ['A', 'b', 'c'] [3, 2, 1]");
  EXPECT_EQ(render("{{ [{'n': 'b'}, {'n': 'a'}]|sort(attribute='n')|map(attribute='n')|join }}"),
            "ab");
  EXPECT_EQ(render("{{ [3, 1, 2]|max }} {{ [3, 1, 2]|min }} {{ [1, 2, 3]|sum }} {{ [{'v': 1}, "
                   "{'v': 2}]|sum(attribute='v') }}"),
            "3 1 6 3");
}

TEST(JinjaFilters, SelectRejectAndMap) {
  const Value vars = Value::object({{"msgs", messages()}});
  EXPECT_EQ(render("{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }}",
                   vars),
            "['hi']");
  EXPECT_EQ(
      render("{{ msgs|rejectattr('role', 'eq', 'user')|map(attribute='content')|first }}", vars),
      "yo");
  EXPECT_EQ(render("{{ [1, 2, 3]|select('odd')|list }} {{ [1, 2, 3]|reject('odd')|list }} {{ [0, "
                   "1, '']|select|list }}"),
            "[1, 3] [2] [1]");
  EXPECT_EQ(render("{{ [{'x': 1}, {'y': 2}]|selectattr('x', 'defined')|list }} {{ [1, "
                   "2]|select('in', [2])|list }}"),
            "[{'x': 1}] [2]");
  EXPECT_EQ(render("{{ [1, 2]|map('string')|join(',') }} {{ ['a']|map('upper')|list }} {{ [{'a': "
                   "{'b': 3}}]|map(attribute='a.b')|list }}"),
            "1,2 ['A'] [3]");
  EXPECT_EQ(render("{{ [{'a': 1}, {}]|map(attribute='a', default=0)|list }} {{ [[1, "
                   "2]]|map(attribute='1')|list }}"),
            "[1, 0] [2]");
}

TEST(JinjaFilters, DefaultAndUnknownFilter) {
  EXPECT_EQ(render("{{ missing|default('d') }} [{{ ''|default('d') }}] {{ ''|default('d', true) }} "
                   "{{ none|d('x') }}"),
            "d [] d None");
  EXPECT_EQ(error_of("{{ 1|nosuchfilter }}"), "no filter named 'nosuchfilter'");
}

// ---- Tests ---------------------------------------------------------------------------------

TEST(JinjaTests, TypeTests) {
  EXPECT_EQ(render("{{ none is none }} {{ 'a' is string }} {{ 1 is number }} {{ true is number }} "
                   "{{ 1 is integer }} {{ 1.0 is integer }}"),
            "True True True True True False");
  EXPECT_EQ(render("{{ {} is mapping }} {{ [] is mapping }} {{ [] is iterable }} {{ 'x' is "
                   "iterable }} {{ 1 is iterable }} {{ 'x' is sequence }}"),
            "True False True True False True");
  EXPECT_EQ(render("{{ true is boolean }} {{ 1 is boolean }} {{ true is true }} {{ 1 is true }} {{ "
                   "false is false }} {{ range is callable }}"),
            "True False True False True True");
}

TEST(JinjaTests, ValueTests) {
  EXPECT_EQ(render("{{ 1 is eq 1 }} {{ 'a' is equalto 'b' }} {{ 3 is odd }} {{ 4 is even }} {{ 10 "
                   "is divisibleby 5 }} {{ 10 is divisibleby(3) }}"),
            "True False True True True False");
  EXPECT_EQ(render("{{ 2 is gt 1 }} {{ 2 is lt 1 }} {{ 2 is in [1, 2] }} {{ 'A' is upper }} {{ 'a' "
                   "is lower }} {{ 1 is not none }}"),
            "True False True True True True");
  EXPECT_EQ(error_of("{{ 1 is nosuchtest }}"), "no test named 'nosuchtest'");
}

// ---- Statements ----------------------------------------------------------------------------

TEST(JinjaStatements, IfElifElse) {
  EXPECT_EQ(render("{% if 1 %}a{% elif 2 %}b{% else %}c{% endif %}{% if 0 %}a{% elif 2 %}b{% else "
                   "%}c{% endif %}"
                   "{% if 0 %}a{% elif 0 %}b{% else %}c{% endif %}"),
            "abc");
}

TEST(JinjaStatements, ForLoopVariables) {
  EXPECT_EQ(
      render("{% for x in [1, 2, 3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
             "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}"),
      "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.previtem }}{{ loop.nextitem }}{{ "
                   "loop.cycle('a', 'b') }},{% endfor %}"),
            "2a,13b,2a,");
}

TEST(JinjaStatements, ForLoopFilterElseAndUnpacking) {
  EXPECT_EQ(render("{% for i in range(5) if i is odd %}{{ i }}/{{ loop.length }} {% endfor %}"),
            "1/2 3/2 ");
  EXPECT_EQ(render("{% for i in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }};{% endfor %}"), "12;34;");
  EXPECT_EQ(render("{% for k, v in {'x': 1, 'y': 2}.items() %}{{ k }}={{ v }} {% endfor %}"),
            "x=1 y=2 ");
  EXPECT_EQ(render("{% for c in 'héj' %}{{ c }}.{% endfor %}{% for k in {'p': 1, 'q': 2} %}{{ k "
                   "}}{% endfor %}"),
            "h.é.j.pq");
  EXPECT_EQ(error_of("{% for a, b in [[1, 2, 3]] %}{% endfor %}"),
            "cannot unpack 3 value(s) into 2 names");
}

TEST(JinjaStatements, BreakAndContinue) {
  EXPECT_EQ(render("{% for i in range(10) %}{% if i == 4 %}{% break %}{% endif %}"
                   "{% if i is odd %}{% continue %}{% endif %}{{ i }}{% endfor %}"),
            "02");
  EXPECT_EQ(error_of("{% break %}"), "'break' outside of a loop");
}

TEST(JinjaStatements, ScopingFollowsJinja) {
  // A set inside a loop body does not leak out (nor into the next iteration).
  EXPECT_EQ(
      render("{% set x = 'o' %}{% for i in [0, 1] %}{% if i == 0 %}{% set x = 'a' %}{% endif %}"
             "[{{ x }}]{% endfor %}{{ x }}"),
      "[a][o]o");
  // Namespaces are how templates carry state out of loops.
  EXPECT_EQ(
      render(
          "{% set ns = namespace(n=0, seen=[]) %}{% for i in range(3) %}{% set ns.n = ns.n + i %}"
          "{% endfor %}{{ ns.n }}"),
      "3");
  EXPECT_EQ(error_of("{% set d = {} %}{% set d.x = 1 %}"),
            "cannot assign attribute 'x' on 'd': only namespace() objects accept assignments");
}

TEST(JinjaStatements, SetForms) {
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set (c, d) = [3, 4] %}{{ c }}{{ d }}"),
            "1234");
  EXPECT_EQ(render("{% set block %}X{{ 1 + 1 }}{% endset %}[{{ block }}]"), "[X2]");
  EXPECT_EQ(render("{% set up | upper | trim %} hi {% endset %}[{{ up }}]"), "[HI]");
}

TEST(JinjaStatements, Macros) {
  EXPECT_EQ(
      render("{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}"
             "{{ greet('Bob') }} {{ greet('Al', greeting='Hi') }} {{ greet(name='Z') }}"),
      "Hello, Bob! Hi, Al! Hello, Z!");
  EXPECT_EQ(
      render("{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}"),
      "1(2,){'k': 3}");
  EXPECT_EQ(
      render(
          "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }}"),
      "4321");
  // Macros see the variables of their defining scope as they are when called.
  EXPECT_EQ(render("{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}"),
            "2");
}

TEST(JinjaStatements, CallFilterRawWithDoAndComments) {
  EXPECT_EQ(render("{% macro box(x) %}[{{ caller(x) }}]{% endmacro %}{% call(y) box(5) %}in{{ y "
                   "}}{% endcall %}"),
            "[in5]");
  EXPECT_EQ(render("{% filter upper %}abc{{ 'd' }}{% endfilter %}"), "ABCD");
  EXPECT_EQ(render("{% raw %}{{ not evaluated }}{% endraw %}"), "{{ not evaluated }}");
  EXPECT_EQ(render("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]"), "3[]");
  EXPECT_EQ(render("{% set l = [] %}{% do l.append(1) %}{{ l }}{# a {{ comment }} #}"), "[1]");
  EXPECT_EQ(render("{% generation %}kept{% endgeneration %}"), "kept");
}

TEST(JinjaStatements, Globals) {
  EXPECT_EQ(render("{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }}"),
            "[0, 1, 2] [1, 4, 7] [5, 3, 1]");
  EXPECT_EQ(render("{{ dict(a=1, b='x') }} {{ dict([['k', 2]]) }} {{ namespace(a=1) }}"),
            "{'a': 1, 'b': 'x'} {'k': 2} <Namespace {'a': 1}>");
  EXPECT_EQ(error_of("{{ raise_exception('Roles must alternate') }}"), "Roles must alternate");
  try {
    render("line\n  {{ raise_exception('bad' ~ 1) }}");
    ADD_FAILURE() << "expected TemplateRaise";
  } catch (const TemplateRaise& e) {
    EXPECT_STREQ(e.what(), "bad1");
    EXPECT_EQ(e.line(), 2);
  }
}

// ---- Whitespace control --------------------------------------------------------------------

TEST(JinjaWhitespace, DashStripsAllWhitespace) {
  EXPECT_EQ(render_plain("a  \n {%- if true -%} \n b \n {%- endif -%}\n c"), "abc");
  EXPECT_EQ(render_plain("a \n {{- 'x' -}} \n b"), "axb");
  EXPECT_EQ(render_plain("a \n {#- note -#} \n b"), "ab");
}

TEST(JinjaWhitespace, TrimBlocksAndLstripBlocks) {
  const std::string src =
      "<ul>\n  {% for x in [1, 2] %}\n  <li>{{ x }}</li>\n  {% endfor %}\n</ul>";
  EXPECT_EQ(render_plain(src), "<ul>\n  \n  <li>1</li>\n  \n  <li>2</li>\n  \n</ul>");
  EXPECT_EQ(render(src), "<ul>\n  <li>1</li>\n  <li>2</li>\n</ul>");
  // lstrip_blocks never applies to {{ }}, nor to a tag preceded by text on its line.
  EXPECT_EQ(render("  {{ 'v' }}\nx {% if true %}y{% endif %}"), "  v\nx y");
  // "{%+" keeps the indentation, "+%}" keeps the newline.
  EXPECT_EQ(render("  {%+ if true +%}\nx{% endif %}"), "  \nx");
  EXPECT_EQ(render("  {# comment #}\nx"), "x");
}

TEST(JinjaWhitespace, SourceNormalization) {
  EXPECT_EQ(render("a\r\nb\rc\n"), "a\nb\nc");  // newlines normalized, one trailing newline dropped
  EXPECT_EQ(render("a\n\n"), "a\n");
  EXPECT_EQ(render("  {% raw %}  {{ x }}  {% endraw %}  \nq"), "  {{ x }}    \nq");
}

// ---- Errors --------------------------------------------------------------------------------

TEST(JinjaErrors, SyntaxErrorsCarryLineAndColumn) {
  struct Case {
    const char* source;
    int line, column;
    const char* message;
  };
  const Case cases[] = {
      {"{% if x %}\n{% endfor %}", 2, 4,
       "unknown tag 'endfor', expected 'elif' or 'else' or 'endif'"},
      {"{{ 'abc }}", 1, 4, "unterminated string literal"},
      {"ok {{ x", 1, 4, "unexpected end of template, expected end of tag"},
      {"{# open", 1, 1, "missing end of comment tag"},
      {"é {{ 1 + }}", 1, 10, "unexpected end of print statement"},
      {"{% frobnicate %}", 1, 4, "unknown tag 'frobnicate'"},
      {"{{ (1 }}", 1, 7, "unexpected '}', expected ')'"},
      {"{{ x $ y }}", 1, 6, "unexpected character '$'"},
      {"{% for x in y %}", 1, 17, "unexpected end of template, expected 'endfor' or 'else'"},
      {"{% extends 'base' %}", 1, 4, "unsupported tag 'extends'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.source);
    try {
      ChatTemplate::parse(c.source);
      ADD_FAILURE() << "expected a syntax error";
    } catch (const TemplateError& e) {
      EXPECT_EQ(e.message(), c.message);
      EXPECT_EQ(e.line(), c.line);
      EXPECT_EQ(e.column(), c.column);
    }
  }
}

TEST(JinjaErrors, RuntimeErrorsPointAtTheExpression) {
  try {
    render("line one\n{% set x = 1 %}{{ x.strip() }}");
    ADD_FAILURE() << "expected an error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.column(), 20);  // the ".strip" lookup
    EXPECT_EQ(e.message(), "'int object' has no attribute 'strip'");
  }
}

}  // namespace
