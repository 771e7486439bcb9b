// write_file_atomically / write_stream_atomically: the target is replaced whole or left alone, no temporary stays.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>

#include "error_testing.hpp"
#include "swinfer/io/atomic_file.hpp"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using swinfer_test::error_of;

/// A fresh directory, removed with everything in it at scope exit.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::random_device random;
    path = fs::temp_directory_path() / ("swinfer-atomic-test-" + std::to_string(random()) + std::to_string(random()));
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  /// How many entries the directory holds (temporaries are hidden dot files, which this counts too).
  long entries() const { return std::distance(fs::directory_iterator(path), fs::directory_iterator()); }
};

std::string contents(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("write_file_atomically writes through a temporary in the target's folder", "[io][atomic_file]") {
  temp_dir dir;
  const fs::path target = dir.path / "out.txt";
  fs::path seen;
  swinfer::write_file_atomically(target, [&](const fs::path& temporary) {
    seen = temporary;
    CHECK_FALSE(fs::exists(target));  // nothing at the target until the file is complete
    std::ofstream(temporary) << "new";
  });
  CHECK(seen.parent_path() == dir.path);
  CHECK(seen.filename().string().starts_with(".out.txt.tmp-"));
  CHECK(contents(target) == "new");
  CHECK(dir.entries() == 1);

  // An existing target is replaced.
  swinfer::write_stream_atomically(target, [](std::ostream& out) { out << "newer"; });
  CHECK(contents(target) == "newer");
  CHECK(dir.entries() == 1);
}

TEST_CASE("write_file_atomically: a throwing writer leaves no partial target and no temporary", "[io][atomic_file]") {
  temp_dir dir;
  const fs::path target = dir.path / "out.txt";
  const auto half_then_throw = [](const fs::path& temporary) {
    std::ofstream(temporary) << "half";
    throw std::runtime_error("writer failed");
  };
  SECTION("no target before") {
    CHECK_THROWS_WITH(swinfer::write_file_atomically(target, half_then_throw), "writer failed");
    CHECK(dir.entries() == 0);
  }
  SECTION("an existing target is kept as it was") {
    std::ofstream(target) << "old";
    CHECK_THROWS_WITH(swinfer::write_file_atomically(target, half_then_throw), "writer failed");
    CHECK(contents(target) == "old");
    CHECK(dir.entries() == 1);
  }
  SECTION("the stream writer") {
    std::ofstream(target) << "old";
    CHECK_THROWS_AS(swinfer::write_stream_atomically(target,
                                                     [](std::ostream& out) {
                                                       out << "half";
                                                       throw std::runtime_error("writer failed");
                                                     }),
                    std::runtime_error);
    CHECK(contents(target) == "old");
    CHECK(dir.entries() == 1);
  }
}

TEST_CASE("write_file_atomically: failures name the path and clean up", "[io][atomic_file]") {
  temp_dir dir;
  SECTION("the rename fails (the target is a non-empty directory)") {
    fs::create_directories(dir.path / "out.txt" / "keep");
    CHECK_THAT(error_of([&] { swinfer::write_stream_atomically(dir.path / "out.txt", [](std::ostream& o) { o << "x"; }); }),
               Contains("out.txt"));
    CHECK(dir.entries() == 1);
    CHECK(fs::is_directory(dir.path / "out.txt" / "keep"));
  }
  SECTION("the folder does not exist") {
    const fs::path target = dir.path / "missing" / "out.txt";
    CHECK_THAT(error_of([&] { swinfer::write_stream_atomically(target, [](std::ostream& o) { o << "x"; }); }),
               Contains(target.string()) && Contains("No such file or directory"));
    CHECK(dir.entries() == 0);
  }
  SECTION("the writer creates nothing") {
    CHECK_THAT(error_of([&] { swinfer::write_file_atomically(dir.path / "out.txt", [](const fs::path&) {}); }),
               Contains("out.txt"));
    CHECK(dir.entries() == 0);
  }
  SECTION("a temporary that cannot be removed is named with the original failure") {
    fs::path temporary;
    const auto message = error_of([&] {
      swinfer::write_file_atomically(dir.path / "out.txt", [&](const fs::path& t) {
        temporary = t;
        fs::create_directories(t / "inside");  // a non-empty directory: remove() refuses it
        throw std::runtime_error("writer failed");
      });
    });
    CHECK_THAT(message, Contains("writer failed") && Contains(temporary.filename().string()) &&
                            Contains("could not be removed"));
    CHECK_FALSE(fs::exists(dir.path / "out.txt"));
  }
  CHECK_THAT(error_of([] { swinfer::write_file_atomically("some/dir/", [](const fs::path&) {}); }),
             Contains("not a file name"));
}

TEST_CASE("unfinished_write_target names the file a leftover temporary stood for", "[io][atomic_file]") {
  temp_dir dir;
  const fs::path target = dir.path / "case_seg.nii.gz";
  fs::path temporary;
  CHECK_THROWS(swinfer::write_file_atomically(target, [&](const fs::path& t) {
    temporary = t;
    throw std::runtime_error("killed");  // as if the process died here
  }));
  CHECK(swinfer::unfinished_write_target(temporary) == target);
  for (const char* other : {"case_seg.nii.gz", ".case_seg.nii.gz", ".tmp-12ab", ".x.tmp-", ".x.tmp-12xz", "x.tmp-12ab"}) {
    INFO(other);
    CHECK_FALSE(swinfer::unfinished_write_target(dir.path / other));
  }
}
