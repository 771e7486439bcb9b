// The tag lists every run-time name list (options, help, errors) is built from.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "swinfer/backend/cpu.hpp"
#include "swinfer/core/tag_list.hpp"

TEST_CASE("tag lists: names, joined names and dispatch by name", "[tag_list]") {
  using list = swinfer::tag_list<swinfer::precision::fp32, swinfer::precision::bf16, swinfer::precision::fp16>;
  CHECK(list::names() == std::vector<std::string>{"fp32", "bf16", "fp16"});
  CHECK(list::joined() == "fp32, bf16 or fp16");
  CHECK(list::joined(",", ",") == "fp32,bf16,fp16");
  CHECK(swinfer::tag_list<swinfer::layout::ncdhw>::joined() == "ncdhw");
  CHECK(swinfer::backend_tags::joined() == "cpu, onednn or hip");

  std::string seen;
  CHECK(list::visit("bf16", [&]<class P>(P) { seen = swinfer::precision_traits<P>::name; }));
  CHECK(seen == "bf16");
  CHECK_FALSE(list::visit("int8", [&](auto) { seen = "called"; }));
  CHECK(seen == "bf16");
}

TEST_CASE("tag lists: every listed precision and layout runs on the cpu backend", "[tag_list]") {
  // The run-time lists offer only what some backend implements; the cpu backend implements every precision that any
  // backend does, so a precision added to precision_tags before a backend implements it fails here.
  std::size_t checked = 0;
  for (const auto& p : swinfer::precision_tags::names())
    for (const auto& l : swinfer::layout_tags::names())
      swinfer::precision_tags::visit(p, [&]<class P>(P) {
        swinfer::layout_tags::visit(l, [&]<class L>(L) {
          CHECK(swinfer::is_supported_v<swinfer::backend::cpu, P, L>);
          ++checked;
        });
      });
  CHECK(checked == swinfer::precision_tags::names().size() * swinfer::layout_tags::names().size());
}
