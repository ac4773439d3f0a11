# Runs one Python test file with PYTHON, checked at test time (so a venv made after configuring
# counts). Usage: cmake -DPYTHON=... -DSCRIPT=... -P run_python_test.cmake
if(NOT EXISTS "${PYTHON}")
  message(FATAL_ERROR "${PYTHON} does not exist: run scripts/setup-torch-venv.sh to create the torch venv "
                      "the Python worker's tests need (or set KPILOT_TORCH_VENV_PYTHON)")
endif()
execute_process(COMMAND "${PYTHON}" "${SCRIPT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SCRIPT} failed (exit ${rc})")
endif()
