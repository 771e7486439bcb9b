// swinfer's Python module (_swinfer): networks of swinfer::runtime over numpy and torch arrays. A thin layer: every
// choice is the C++ API's; this file turns arrays into tensors without copies, Python arguments into typed options,
// and swinfer's errors into the Python exceptions the package documents. Python-side conveniences (torch in and
// out, MONAI's inferer) are in swinfer/__init__.py and swinfer/monai.py.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>
#include <nlohmann/json.hpp>
#include <swinfer/io/nifti_format.hpp>
#include <swinfer/model/config_json.hpp>
#include <swinfer/model/expected_tensors.hpp>
#include <swinfer/core/memory.hpp>
#include <swinfer/model/load.hpp>
#include <swinfer/runtime.hpp>
#include <swinfer/runtime/int8_choice.hpp>
#include <swinfer/runtime/named_options.hpp>
#include <swinfer/version.hpp>
#include <swinfer/backend/cpu.hpp>
#ifdef SWINFER_HAS_ONEDNN
#include <swinfer/backend/onednn.hpp>
#endif
#ifdef SWINFER_HAS_HIP
#include <swinfer/backend/hip.hpp>
#endif

#include "arrays.hpp"

namespace swinfer_python {
namespace {

/// Raised for a model file that cannot be read (a subclass of OSError).
struct model_file_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs `f`, turning swinfer's errors (argument checks) into ValueError.
template <class F>
auto value_checked(F&& f) {
  try {
    return f();
  } catch (const swinfer::error& e) {
    throw nb::value_error(e.what());
  }
}

/// A network and what it was built from.
struct network {
  std::unique_ptr<swinfer::network> net;
  std::string model;
  std::string config_source;

  const swinfer::swin_unetr_config& config() const { return net->config(); }

  /// The input as a tensor, checked: 5-D float32 (ValueError), the channels and spatial multiples the model takes
  /// (ValueError), finite (ValueError naming the count).
  swinfer::tensor<float> input(const host_array& x) const {
    swinfer::tensor<float> t = tensor_from_array(x, "input");
    value_checked([&] {
      config().check_input(t.shape());
      return 0;
    });
    check_input_finite(t);
    return t;
  }

  void check_input_finite(const swinfer::tensor<float>& t) const {
    value_checked([&] {
      // check_finite reads the tensor as packed; a borrowed one is packed in its layout.
      swinfer::detail::check_finite(t, "input");
      return 0;
    });
  }

  /// Logits of one forward, in the input's layout.
  swinfer::tensor<float> forward(const host_array& x) {
    const swinfer::tensor<float> t = input(x);
    nb::gil_scoped_release release;
    return net->forward(t);
  }

  swinfer::tensor<float> sliding_window(const host_array& x, const swinfer::sliding_window_options& o,
                                        const std::function<void(std::int64_t, std::int64_t)>& progress) {
    swinfer::tensor<float> t = tensor_from_array(x, "input");
    value_checked([&] {
      if (t.shape().c != config().in_channels) {
        swinfer::detail::fail("input has ", t.shape().c, " channels but the model takes in_channels=",
                              config().in_channels, " (input shape ", t.shape().str(), ")");
      }
      swinfer::check_sliding_window_options(o, "sliding_window");
      return 0;
    });
    check_input_finite(t);
    const swinfer::progress_callback report = progress_in_python(progress);
    nb::gil_scoped_release release;
    return net->infer_volume(t, o, report);
  }

  swinfer::tensor<std::uint8_t> segment(const host_array& x, const swinfer::sliding_window_options& o,
                                        const std::function<void(std::int64_t, std::int64_t)>& progress) {
    swinfer::tensor<float> t = tensor_from_array(x, "input");
    value_checked([&] {
      swinfer::check_sliding_window_options(o, "sliding_window");
      return 0;
    });
    check_input_finite(t);
    const swinfer::progress_callback report = progress_in_python(progress);
    nb::gil_scoped_release release;
    return net->segment_volume(t, o, report, nullptr);
  }

  /// The callback with the GIL held while it runs (the window loop runs without it); none when `progress` is empty.
  static swinfer::progress_callback progress_in_python(const std::function<void(std::int64_t, std::int64_t)>& progress) {
    if (!progress) return {};
    return [progress](std::int64_t done, std::int64_t total) {
      nb::gil_scoped_acquire hold;
      progress(done, total);
    };
  }

  nb::dict info() const {
    const auto& c = config();
    nb::dict d;
    d["arch"] = std::string(swinfer::model_arch_name(c.arch));
    d["config"] = nb::module_::import_("json").attr("loads")(swinfer::config_to_json(c).dump());
    d["config_source"] = config_source;
    d["parameters"] = swinfer::parameter_count(c);
    d["model"] = model;
    d["runs"] = net->description();
    d["device"] = net->device();
    return d;
  }
};

/// A ValueError unless `c` names a backend this build has and a precision and layout that backend implements: what
/// make_network refuses, refused before the checkpoint is read into a model.
void check_network_choice(const swinfer::network_choice& c) {
  value_checked([&] {
    using swinfer::detail::fail;
    const bool known = swinfer::backend_tags::visit(c.backend, [&]<class B>(B) {
      if constexpr (!swinfer::runtime::missing_backend<B>.empty()) {
        fail(swinfer::runtime::missing_backend<B>);
      } else {
        const bool precision_known = swinfer::precision_tags::visit(c.precision, [&]<class P>(P) {
          const bool layout_known = swinfer::layout_tags::visit(c.layout, [&]<class L>(L) {
            if constexpr (!swinfer::is_supported_v<B, P, L>) {
              fail("backend ", B::name, " does not implement precision ", c.precision, " with layout ", c.layout);
            }
          });
          if (!layout_known) fail("unknown layout '", c.layout, "' (use ", swinfer::layout_tags::joined(), ")");
        });
        if (!precision_known) {
          fail("unknown precision '", c.precision, "' (use ", swinfer::precision_tags::joined(), ")");
        }
      }
    });
    if (!known) fail("unknown backend '", c.backend, "' (use ", swinfer::backend_tags::joined(), ")");
    return 0;
  });
}

/// The backends this build has.
std::vector<std::string> available_backends() {
  std::vector<std::string> names;
  for (const auto& name : swinfer::backend_tags::names()) {
    swinfer::backend_tags::visit(name, [&]<class B>(B) {
      if constexpr (swinfer::runtime::missing_backend<B>.empty()) names.push_back(name);
    });
  }
  return names;
}

/// MONAI's sliding_window_inference arguments as swinfer's options; a wrong name or value is a ValueError.
swinfer::sliding_window_options window_options(const std::vector<std::int64_t>& roi_size, std::int64_t sw_batch_size,
                                               const std::vector<double>& overlap, const std::string& mode,
                                               const std::vector<double>& sigma_scale, const std::string& padding_mode,
                                               float cval, int threads) {
  return value_checked([&] {
    swinfer::sliding_window_options o;
    o.roi = swinfer::per_axis<std::int64_t>(roi_size);
    o.sw_batch_size = sw_batch_size;
    o.overlap = swinfer::per_axis<double>(overlap);
    o.mode = swinfer::parse_blend_mode(mode);
    o.sigma_scale = swinfer::per_axis<double>(sigma_scale);
    o.padding_mode = swinfer::parse_pad_mode(padding_mode);
    o.cval = cval;
    o.threads = threads;
    swinfer::check_sliding_window_options(o, "sliding_window");
    return o;
  });
}

std::unique_ptr<network> load(const std::string& model, const std::optional<std::string>& config,
                              const std::string& backend, const std::string& precision, const std::string& layout,
                              int threads, const std::optional<std::string>& calibration, bool int8_dynamic,
                              const std::map<std::string, std::string>& backend_options) {
  check_network_choice({backend, precision, layout});
  if (!std::filesystem::exists(model)) {
    throw model_file_error("swinfer.load: no model file '" + model + "'");
  }
  if (config && !std::filesystem::exists(*config)) {
    throw model_file_error("swinfer.load: no config file '" + *config + "'");
  }
  swinfer::loaded_model loaded;
  try {
    loaded = swinfer::load_model(model, config.value_or(""));
  } catch (const swinfer::error& e) {
    throw model_file_error(e.what());
  }
  swinfer::runtime::network_options options = value_checked([&] {
    swinfer::check_thread_count(threads, "swinfer.load");
    swinfer::runtime::network_options o{swinfer::engine_options{threads}};
    for (const auto& [key, value] : backend_options) swinfer::runtime::set_named_option(o, backend, key, value);
    swinfer::runtime::apply_int8_choice(o, loaded, model, precision, {calibration.value_or(""), int8_dynamic},
                                        {"calibration=", "int8_dynamic=True", "precision="});
    return o;
  });
  auto made = std::make_unique<network>();
  made->model = model;
  made->config_source = loaded.calibration        ? "int8 model file"
                        : loaded.config_from_file ? "config file over the tensors"
                                                  : "inferred from the tensors";
  {
    nb::gil_scoped_release release;
    made->net = swinfer::runtime::make_network({backend, precision, layout}, loaded.config, loaded.weights, options,
                                               model);
  }
  return made;
}

nb::list named_options_list() {
  nb::list list;
  for (const auto& o : swinfer::runtime::named_options()) {
    nb::dict d;
    d["backend"] = std::string(o.backend);
    d["key"] = std::string(o.key);
    d["values"] = o.values;
    d["meaning"] = o.meaning;
    list.append(d);
  }
  return list;
}

}  // namespace
}  // namespace swinfer_python

NB_MODULE(_swinfer, m) {
  namespace nb = nanobind;
  using namespace swinfer_python;
  m.doc() = "swinfer's compiled core; use the swinfer package";
  m.attr("__version__") = swinfer::version_string;
  m.attr("backends") = available_backends();
  nb::exception<model_file_error>(m, "ModelFileError", PyExc_OSError);

  nb::class_<network>(m, "Network")
      .def("forward_numpy",
           [](network& n, const host_array& x) { return array_from_tensor<nb::numpy>(n.forward(x)); })
      .def("forward_torch",
           [](network& n, const host_array& x) { return array_from_tensor<nb::pytorch>(n.forward(x)); })
      .def("sliding_window",
           [](network& n, const host_array& x, const swinfer::sliding_window_options& o, bool argmax, bool torch,
              const std::function<void(std::int64_t, std::int64_t)>& progress) -> nb::object {
             if (argmax) {
               auto labels = n.segment(x, o, progress);
               return torch ? array_from_tensor<nb::pytorch>(std::move(labels))
                            : array_from_tensor<nb::numpy>(std::move(labels));
             }
             auto logits = n.sliding_window(x, o, progress);
             return torch ? array_from_tensor<nb::pytorch>(std::move(logits))
                          : array_from_tensor<nb::numpy>(std::move(logits));
           },
           nb::arg("x"), nb::arg("options"), nb::arg("argmax"), nb::arg("torch"), nb::arg("progress").none())
      .def_prop_ro("info", &network::info)
      .def_prop_ro("in_channels", [](const network& n) { return n.config().in_channels; })
      .def_prop_ro("out_channels", [](const network& n) { return n.config().out_channels; })
      .def_prop_ro("description", [](const network& n) { return n.net->description(); });

  nb::class_<swinfer::sliding_window_options>(m, "WindowOptions");
  m.def("window_options", &window_options, nb::arg("roi_size"), nb::arg("sw_batch_size"), nb::arg("overlap"),
        nb::arg("mode"), nb::arg("sigma_scale"), nb::arg("padding_mode"), nb::arg("cval"), nb::arg("threads"));
  m.def("load", &load, nb::arg("model"), nb::arg("config").none(), nb::arg("backend"), nb::arg("precision"),
        nb::arg("layout"), nb::arg("threads"), nb::arg("calibration").none(), nb::arg("int8_dynamic"),
        nb::arg("backend_options"));
  m.def("named_options", &named_options_list);
  m.def("reuse_freed_memory", &swinfer::reuse_freed_memory);
  m.def("input_copies", [] { return input_copies.load(); });
}
