"""Install the Cramér distributional RL zoo."""

import setuptools

# Ranges known to work together (measured on Python 3.11, CPU, 2026-11).
# jax 0.11 needs Python >= 3.12, so Python 3.11 resolves to jax 0.10.x
# (CI) and Python >= 3.12 to 0.11.x, the GPU figures' version (checked on the
# CPU: docs/development.md).
JAX_RANGE = '>=0.10,<0.12'
INSTALL_REQUIRES = [
    'absl-py>=2.1,<3',
    'numpy>=2.0,<3',
    f'jax{JAX_RANGE}',
    f'jaxlib{JAX_RANGE}',
    'dm-haiku==0.0.17',
    'optax==0.2.8',
    'chex>=0.1.90,<0.2',
    'dm-env>=1.6,<1.7',
    'gymnasium>=1.4,<1.5',
    'ale-py==0.12.1',
    'matplotlib>=3.8,<4',
    'pillow>=10',
    # TensorBoard event files without TensorFlow (numpy, protobuf, packaging).
    'tensorboardX>=2.6,<3',
]

# The reference implementations the loss benchmark and the loss tests compare
# with (scripts.benchmarks.bench_losses). rlax pulls distrax, which pulls an unpinned
# tfp-nightly: pinned, so that an install made next month resolves to the same,
# working stack.
BENCH_REQUIRES = [
    'rlax==0.1.9',
    'distrax==0.1.9',
    'tfp-nightly==0.26.0.dev20261027',
]

# The MinAtar suite (zoo.suites.minatar_suite, scripts.experiments.minatar_*): MinAtar and its
# JAX port pgx-minatar are GPL-3.0 (pgx itself is Apache-2.0), so they stay
# out of this Apache-2.0 project's core install.
MINATAR_REQUIRES = [
    'minatar==1.0.15',
    'pgx==2.6.0',
    'pgx-minatar==0.5.1',
]

# The documentation site (mkdocs.yml): ranges that build it with --strict.
DOCS_REQUIRES = ['mkdocs>=1.6,<2', 'mkdocs-material>=9.6,<10',
                 'mkdocstrings[python]>=1.0,<2', 'mkdocstrings-python>=2.0,<3']

setuptools.setup(
    name='cramer-dqn-zoo',
    version='0.1.0',
    description=(
        'Quantile distributional RL agents (QR-DQN, CR-DQN, NC-CR-DQN, '
        'NC-QR-DQN, IQN, CR-IQN) with sort-based Cramér losses, in JAX, DQN Zoo '
        'style.'
    ),
    license='Apache-2.0',
    python_requires='>=3.11',  # jaxlib 0.10 has no wheels for 3.10.
    packages=setuptools.find_packages(include=[
        'losses*', 'networks*', 'zoo*', 'qr_dqn*', 'cr_dqn*', 'nc_cr_dqn*',
        'nc_qr_dqn*', 'iqn*', 'scripts*',
    ]),
    package_data={'zoo': ['reference/*.csv', 'reference/*.csv.gz',
                          'reference/atari100k/*']},
    install_requires=INSTALL_REQUIRES,
    extras_require={
        'bench': BENCH_REQUIRES,
        'minatar': MINATAR_REQUIRES,
        # Ray is in 'test' so that the campaign's Ray backend is tested on a local Ray instance;
        # the 'docs' packages are in 'test' so that CI builds the site (mkdocs build --strict).
        'test': ['pytest>=8', 'pytest-xdist>=3.6,<4', 'hypothesis>=6.100', 'pytest-timeout>=2.3',
                 'scipy>=1.13',
                 'ray>=2.40,<3'] + BENCH_REQUIRES + MINATAR_REQUIRES + DOCS_REQUIRES,
        # JAX's CUDA wheels (the plugin of the same version as jax): CUDA 12,
        # or CUDA 13 (the H200 figures' stack: jax 0.11.2, Python >= 3.12).
        'cuda': [f'jax[cuda12]{JAX_RANGE}'],
        'cuda13': [f'jax[cuda13]{JAX_RANGE}'],
        'ray': ['ray>=2.40,<3'],
        # The documentation site (mkdocs.yml): ranges that build it with --strict.
        'docs': DOCS_REQUIRES,
    },
)
