# ctest -P script: the out-of-range parameters issue 16 found (pipeline JSON, model config, command-line flags), each
# refused before any work: a non-zero exit, an error naming the parameter, its value and its allowed range, no
# output file, and no sanitizer report (this script also runs against the sanitizer build).
# Variables: SWINFER, DATA (data/demo), NIFTI (tests/data/nifti), OUT.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
# A 5x6x7 image: every case must be refused before its size matters.
set(image ${NIFTI}/n1_float32.nii)

include(${CMAKE_CURRENT_LIST_DIR}/expect_failure.cmake)

# expect_refusal(<case> <text the error must hold> [segment arguments...])
function(expect_refusal name expected)
  set(output ${OUT}/${name}.nii.gz)
  expect_failure(${name} "${expected}" ${output}
                 segment --model ${DATA}/model.pt --input ${image} --output ${output} --quiet ${ARGN})
endfunction()

# write_json(<name> <text>): a pipeline or config file in OUT.
function(write_json name text)
  file(WRITE ${OUT}/${name}.json "${text}")
endfunction()

# Pipeline JSON. [2^21, 2^21, 2^22] wrapped the crop's element count to 0 and the copy ran past it (SIGSEGV).
write_json(k_divisible_wrap [=[{"crop_foreground": {"k_divisible": [2097152, 2097152, 4194304]}}]=])
expect_refusal(k_divisible_wrap "crop_foreground: 'k_divisible' is 2097152; allowed range [0, 4096]"
               --pipeline ${OUT}/k_divisible_wrap.json)
write_json(k_divisible_3e6 [=[{"crop_foreground": {"k_divisible": 3000000}}]=])
expect_refusal(k_divisible_3e6 "'k_divisible' is 3000000; allowed range [0, 4096]"
               --pipeline ${OUT}/k_divisible_3e6.json)
write_json(spacing_1e-7 [=[{"spacing": [1e-7, 1e-7, 1e-7]}]=])
expect_refusal(spacing_1e-7 "spacing: 'pixdim' is 1e-07; allowed range [0.001, 1000]"
               --pipeline ${OUT}/spacing_1e-7.json)
write_json(spacing_1e-300 [=[{"spacing": {"pixdim": [1e-300, 1, 1]}}]=])
expect_refusal(spacing_1e-300 "'pixdim' is 1e-300; allowed range [0.001, 1000]" --pipeline ${OUT}/spacing_1e-300.json)
write_json(margin_2p62 [=[{"crop_foreground": {"margin": 4611686018427387904}}]=])
expect_refusal(margin_2p62 "'margin' is 4611686018427387904; allowed range [0, 4096]"
               --pipeline ${OUT}/margin_2p62.json)
write_json(margin_2p64 [=[{"crop_foreground": {"margin": [0, 18446744073709551615, 0]}}]=])
expect_refusal(margin_2p64 "'margin' is 18446744073709551615" --pipeline ${OUT}/margin_2p64.json)
# In range each, but together a 66^3 crop of a 5x6x7 image resampled to 0.5 mm: over a thousand times its voxels.
write_json(k_divisible_66 [=[{"spacing": 0.5, "crop_foreground": {"k_divisible": 66}}]=])
expect_refusal(k_divisible_66 "'preprocessed voxels / input voxels' is" --pipeline ${OUT}/k_divisible_66.json)
expect_refusal(k_divisible_66_names "k_divisible (66, 66, 66)" --pipeline ${OUT}/k_divisible_66.json)
write_json(intensity_1e300 [=[{"scale_intensity_range": {"a_min": -1e300, "a_max": 1, "b_min": 0, "b_max": 1}}]=])
expect_refusal(intensity_1e300 "'a_min' is -1e+300; allowed range [-1e+30, 1e+30]"
               --pipeline ${OUT}/intensity_1e300.json)

# The same through flags.
expect_refusal(crop_foreground_flag "'margin' is 4611686018427387904" --crop-foreground 4611686018427387904)
expect_refusal(spacing_flag "'pixdim' is 1e-07" --spacing 1e-7)

# Model config.
file(READ ${DATA}/model_config.json config)
string(JSON config_mlp SET "${config}" mlp_ratio 1e300)
write_json(mlp_ratio "${config_mlp}")
expect_refusal(mlp_ratio "'mlp_ratio' is 1e+300; allowed range [0.125, 64]" --config ${OUT}/mlp_ratio.json)
string(JSON config_patch SET "${config}" patch_size 1048576)
write_json(patch_size "${config_patch}")
expect_refusal(patch_size "'patch_size' is 1048576; allowed range [1, 8]" --config ${OUT}/patch_size.json)
string(JSON config_features SET "${config}" feature_size 4294967308)
write_json(feature_size "${config_features}")
expect_refusal(feature_size "'feature_size' is 4294967308; allowed range [1, 1024]" --config ${OUT}/feature_size.json)

# Sliding-window and engine flags, refused while the command line is parsed.
expect_refusal(overlap "--overlap: 'overlap' is 1.5; allowed range [0, 0.99]" --overlap 1.5)
expect_refusal(roi "--roi: 'roi' is 100000; allowed range [1, 4096]" --roi 32,100000,32)
expect_refusal(sigma_scale "'sigma_scale' is 0; allowed range [0.001, 10]" --blend gaussian --sigma-scale 0)
expect_refusal(sw_batch "'sw_batch_size' is 0; allowed range [1, 1024]" --sw-batch 0)
expect_refusal(threads "'threads' is 1000000; allowed range [0, 4096]" --threads 1000000)
# Batch flags: --jobs is a count of worker processes, [1, 1024] (docs/distributed.md).
expect_refusal(jobs_0 "--jobs: 'jobs' is 0; allowed range [1, 1024]" --jobs 0)
expect_refusal(jobs_negative "--jobs: 'jobs' is -3; allowed range [1, 1024]" --jobs -3)
expect_refusal(jobs_1025 "--jobs: 'jobs' is 1025; allowed range [1, 1024]" --jobs 1025)
