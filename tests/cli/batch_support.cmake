# Shared by the batch tests (batch_*.cmake): the input folder, running `swinfer segment` on it, and the checks.
# The caller sets SWINFER (the binary), MODEL (a checkpoint taking 1 channel), TESTS (tests/cli) and BATCH (a
# scratch folder whose inputs/ and reference/ the cli.batch_reference fixture writes).

# Small volumes (8 windows of 32x32x64 each, about 2 s on one core), fast enough to run several times.
set(segment_args --model ${MODEL} --roi 32,32,64 --quiet)
set(good_volumes case1 case2 case3 case4 case5 case6)

# Six good volumes of different sizes (so that largest-first dealing has something to order) but the same number of
# windows (so that a run killed after its first volume still has most of its work ahead), one truncated and one
# with two channels where the model takes one. The bad ones are dealt after the three largest good ones (the
# truncated one has case1's header, the two-channel one is the smallest), so each of the first three workers starts
# on a good volume: batch_resume.cmake stops one of them in the middle of it.
function(make_batch_inputs dir)
  file(REMOVE_RECURSE ${dir})
  file(MAKE_DIRECTORY ${dir})
  set(sizes "40 36 72" "34 34 66" "48 40 80" "33 33 65" "36 44 70" "40 40 68")
  set(seed 1)
  foreach(size IN LISTS sizes)
    separate_arguments(dims UNIX_COMMAND "${size}")
    execute_process(COMMAND perl ${TESTS}/make_volume.pl ${dir}/case${seed}.nii ${dims} 1 ${seed}
                    COMMAND_ERROR_IS_FATAL ANY)
    math(EXPR seed "${seed} + 1")
  endforeach()
  execute_process(COMMAND perl ${TESTS}/make_volume.pl ${dir}/two_channels.nii 24 24 40 2 7 COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND head -c 5000 ${dir}/case1.nii OUTPUT_FILE ${dir}/corrupt.nii COMMAND_ERROR_IS_FATAL ANY)
endfunction()

# The command that starts swinfer: mpirun with RANKS ranks when RANKS is set, else swinfer itself. Under mpirun each
# test has its own Open MPI session folder (TMPDIR, orte_tmpdir_base, PMIx's): tests that run at once (ctest -j) do
# not share one, and what a killed run left there is removed when the test starts again. It lies in OUT, or, when
# that path is too long for the Unix sockets Open MPI and PMIx create in it (108 bytes with their own names), in a
# folder of /tmp named after OUT. Call it before anything is written to OUT, which it clears.
function(swinfer_launcher out)
  file(REMOVE_RECURSE ${OUT})
  if(NOT RANKS)
    set(${out} ${SWINFER} PARENT_SCOPE)
    return()
  endif()
  set(session ${OUT}/mpi-session)
  string(LENGTH "${session}" length)
  if(length GREATER 60)
    string(MD5 hash "${OUT}")
    string(SUBSTRING "${hash}" 0 16 hash)
    set(session /tmp/swinfer-mpi-${hash})
  endif()
  file(REMOVE_RECURSE ${session})
  file(MAKE_DIRECTORY ${session})
  # env(1) execs the launcher, so the ranks stay the launched command's children (watch_batch.sh looks for them).
  set(launcher env TMPDIR=${session} OMPI_MCA_orte_tmpdir_base=${session} PMIX_SYSTEM_TMPDIR=${session}
               PMIX_SERVER_TMPDIR=${session} PRTE_MCA_prte_tmpdir_base=${session}
               ${MPIEXEC} --oversubscribe -n ${RANKS})
  execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(uid EQUAL 0)
    list(APPEND launcher --allow-run-as-root)  # CI runs as root; Open MPI refuses that without being told
  endif()
  set(${out} ${launcher} ${SWINFER} PARENT_SCOPE)
endfunction()

# The workers a batch test asks for (RANKS under mpirun, else JOBS): `parallel`, the flag to add (none under mpirun),
# and `expected`, the launcher and worker count its report must name (check_batch_report's last two arguments).
macro(swinfer_workers)
  if(RANKS)
    set(parallel)
    set(expected mpi ${RANKS})
  else()
    set(parallel --jobs ${JOBS})
    set(expected jobs ${JOBS})
  endif()
endmacro()

# Every good mask in `dir` is byte-identical to the reference run's, and there is no other visible file.
function(check_masks_match dir)
  foreach(name IN LISTS good_volumes)
    execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${BATCH}/reference/${name}_seg.nii.gz
                            ${dir}/${name}_seg.nii.gz RESULT_VARIABLE differ)
    if(NOT differ EQUAL 0)
      message(FATAL_ERROR "${dir}/${name}_seg.nii.gz is missing or differs from the single-process run's")
    endif()
  endforeach()
  file(GLOB visible RELATIVE ${dir} ${dir}/[^.]*)
  list(LENGTH visible count)
  if(NOT count EQUAL 6)
    message(FATAL_ERROR "expected the 6 good masks only in ${dir}, found: ${visible}")
  endif()
endfunction()

# The batch report lists all 8 inputs with the expected counts, and names both bad inputs among the failures.
function(check_batch_report report done failed skipped launcher workers)
  file(READ ${report} json)
  string(JSON volumes LENGTH "${json}" volumes)
  string(JSON got_launcher GET "${json}" launcher)
  string(JSON got_workers LENGTH "${json}" summary workers)
  string(JSON failed_inputs GET "${json}" summary failed_inputs)
  if(NOT volumes EQUAL 8 OR NOT got_launcher STREQUAL launcher OR NOT got_workers EQUAL workers)
    message(FATAL_ERROR "${report}: ${volumes} volumes by ${got_workers} ${got_launcher} workers; expected 8 by "
                        "${workers} ${launcher} workers")
  endif()
  foreach(field done failed skipped)
    string(JSON got GET "${json}" summary ${field})
    if(NOT got EQUAL ${field})
      message(FATAL_ERROR "${report}: ${got} ${field}, expected ${${field}}:\n${json}")
    endif()
  endforeach()
  foreach(bad corrupt.nii two_channels.nii)
    if(NOT failed_inputs MATCHES "${bad}")
      message(FATAL_ERROR "${report} does not name ${bad} among the failures: ${failed_inputs}")
    endif()
  endforeach()
  string(JSON rate GET "${json}" summary volumes_per_minute)
  message(STATUS "${report}: ${done} done, ${failed} failed, ${skipped} skipped; ${rate} volumes per minute")
endfunction()
