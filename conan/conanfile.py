# Conan 2 recipe for swinfer: a header-only package (one package id for every configuration).
from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.files import copy
from conan.tools.layout import basic_layout
import os
import re


class SwinferConan(ConanFile):
    name = "swinfer"
    description = "Header-only C++ inference for MONAI SwinUNETR-family 3D medical segmentation"
    topics = ("header-only", "medical-imaging", "segmentation", "swin-unetr", "inference")
    license = "Apache-2.0"
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    no_copy_source = True

    def set_version(self):
        # The version is written once, in include/swinfer/version.hpp.
        header = os.path.join(self.recipe_folder, "..", "include", "swinfer", "version.hpp")
        with open(header, encoding="utf-8") as f:
            text = f.read()
        parts = [re.search(rf"#define SWINFER_VERSION_{p} (\d+)", text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
        self.version = ".".join(parts)

    def export_sources(self):
        # The recipe lives in conan/; the headers are one level up.
        top = os.path.join(self.recipe_folder, "..")
        copy(self, "*.hpp", os.path.join(top, "include"), os.path.join(self.export_sources_folder, "include"))
        for backend in ("cpu", "onednn"):
            copy(self, "*.hpp", os.path.join(top, "backends", backend, "include"),
                 os.path.join(self.export_sources_folder, "backends", backend, "include"))
        copy(self, "LICENSE", top, self.export_sources_folder)

    def layout(self):
        basic_layout(self, src_folder=".")

    def requirements(self):
        self.requires("eigen/3.4.0")
        self.requires("nlohmann_json/3.11.2")
        self.requires("zlib/[>=1.2.11 <2]")
        self.requires("xtensor/0.24.7")  # the intensity transforms' element-wise maps and reductions

    def package_id(self):
        self.info.clear()

    def validate(self):
        if self.settings.get_safe("compiler.cppstd"):
            check_min_cppstd(self, 20)

    def package(self):
        root = self.source_folder
        copy(self, "LICENSE", root, os.path.join(self.package_folder, "licenses"))
        copy(self, "*.hpp", os.path.join(root, "include"), os.path.join(self.package_folder, "include"))
        copy(self, "*.hpp", os.path.join(root, "backends", "cpu", "include"), os.path.join(self.package_folder, "include"))
        copy(self, "*.hpp", os.path.join(root, "backends", "onednn", "include"), os.path.join(self.package_folder, "include"))

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "swinfer")
        self.cpp_info.set_property("cmake_target_name", "swinfer::swinfer")
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.resdirs = []
        self.cpp_info.system_libs = ["pthread"]
