"""Indicative on-demand prices (USD per instance-hour) of ml.* instances for SageMaker batch
transform and processing jobs, by region, as of :data:`AS_OF`.

Indicative only: the us-east-1 figures are SageMaker's list prices for these types (batch
transform and processing list the same rate); us-west-2 lists the same; the eu-west-1 and
eu-central-1 figures apply each family's ratio of EC2 list prices in that region to
us-east-1's, rounded to a tenth of a cent. Prices change and accounts have discounts:
check https://aws.amazon.com/sagemaker/pricing/ and pass ``--price TYPE=USD_PER_HOUR`` to
use your own. Region -> family -> size -> USD per hour.
"""

AS_OF = "2024-06"
# Families in the instance table (specs.py) with no SageMaker list price at hand: plans with
# them ask for --price.
UNPRICED_FAMILIES = ("g6", "g6e", "inf2")

_US_LIST: dict[str, dict[str, float]] = {
    "m5": {
        "large": 0.115,
        "xlarge": 0.23,
        "2xlarge": 0.461,
        "4xlarge": 0.922,
        "12xlarge": 2.765,
        "24xlarge": 5.53,
    },
    "m6i": {
        "large": 0.115,
        "xlarge": 0.23,
        "2xlarge": 0.461,
        "4xlarge": 0.922,
        "8xlarge": 1.843,
        "12xlarge": 2.765,
        "16xlarge": 3.686,
        "24xlarge": 5.53,
        "32xlarge": 7.373,
    },
    "c5": {
        "xlarge": 0.204,
        "2xlarge": 0.408,
        "4xlarge": 0.816,
        "9xlarge": 1.836,
        "18xlarge": 3.672,
    },
    "c6i": {
        "large": 0.102,
        "xlarge": 0.204,
        "2xlarge": 0.408,
        "4xlarge": 0.816,
        "8xlarge": 1.632,
        "12xlarge": 2.448,
        "16xlarge": 3.264,
        "24xlarge": 4.896,
        "32xlarge": 6.528,
    },
    "r5": {
        "large": 0.151,
        "xlarge": 0.302,
        "2xlarge": 0.605,
        "4xlarge": 1.21,
        "8xlarge": 2.419,
        "12xlarge": 3.629,
        "16xlarge": 4.838,
        "24xlarge": 7.258,
    },
    "g4dn": {
        "xlarge": 0.736,
        "2xlarge": 1.053,
        "4xlarge": 1.686,
        "8xlarge": 3.046,
        "12xlarge": 5.486,
        "16xlarge": 6.093,
    },
    "g5": {
        "xlarge": 1.408,
        "2xlarge": 1.515,
        "4xlarge": 2.03,
        "8xlarge": 3.06,
        "12xlarge": 7.09,
        "16xlarge": 5.12,
        "24xlarge": 10.18,
        "48xlarge": 20.36,
    },
    "p3": {"2xlarge": 3.825, "8xlarge": 14.688, "16xlarge": 28.152},
}

PRICES: dict[str, dict[str, dict[str, float]]] = {
    "us-east-1": _US_LIST,
    "us-west-2": _US_LIST,  # the same list prices
    "eu-west-1": {
        "m5": {
            "large": 0.128,
            "xlarge": 0.256,
            "2xlarge": 0.514,
            "4xlarge": 1.028,
            "12xlarge": 3.083,
            "24xlarge": 6.166,
        },
        "m6i": {
            "large": 0.128,
            "xlarge": 0.256,
            "2xlarge": 0.514,
            "4xlarge": 1.028,
            "8xlarge": 2.055,
            "12xlarge": 3.083,
            "16xlarge": 4.11,
            "24xlarge": 6.166,
            "32xlarge": 8.221,
        },
        "c5": {
            "xlarge": 0.23,
            "2xlarge": 0.461,
            "4xlarge": 0.921,
            "9xlarge": 2.073,
            "18xlarge": 4.146,
        },
        "c6i": {
            "large": 0.115,
            "xlarge": 0.23,
            "2xlarge": 0.461,
            "4xlarge": 0.921,
            "8xlarge": 1.843,
            "12xlarge": 2.764,
            "16xlarge": 3.685,
            "24xlarge": 5.528,
            "32xlarge": 7.37,
        },
        "r5": {
            "large": 0.169,
            "xlarge": 0.338,
            "2xlarge": 0.677,
            "4xlarge": 1.354,
            "8xlarge": 2.707,
            "12xlarge": 4.061,
            "16xlarge": 5.414,
            "24xlarge": 8.122,
        },
        "g4dn": {
            "xlarge": 0.821,
            "2xlarge": 1.175,
            "4xlarge": 1.882,
            "8xlarge": 3.399,
            "12xlarge": 6.122,
            "16xlarge": 6.8,
        },
        "g5": {
            "xlarge": 1.571,
            "2xlarge": 1.691,
            "4xlarge": 2.265,
            "8xlarge": 3.415,
            "12xlarge": 7.912,
            "16xlarge": 5.714,
            "24xlarge": 11.361,
            "48xlarge": 22.722,
        },
        "p3": {"2xlarge": 4.131, "8xlarge": 15.863, "16xlarge": 30.404},
    },
    "eu-central-1": {
        "m5": {
            "large": 0.138,
            "xlarge": 0.276,
            "2xlarge": 0.552,
            "4xlarge": 1.105,
            "12xlarge": 3.312,
            "24xlarge": 6.625,
        },
        "m6i": {
            "large": 0.138,
            "xlarge": 0.276,
            "2xlarge": 0.552,
            "4xlarge": 1.105,
            "8xlarge": 2.208,
            "12xlarge": 3.312,
            "16xlarge": 4.416,
            "24xlarge": 6.625,
            "32xlarge": 8.833,
        },
        "c5": {
            "xlarge": 0.233,
            "2xlarge": 0.466,
            "4xlarge": 0.931,
            "9xlarge": 2.095,
            "18xlarge": 4.19,
        },
        "c6i": {
            "large": 0.116,
            "xlarge": 0.233,
            "2xlarge": 0.466,
            "4xlarge": 0.931,
            "8xlarge": 1.862,
            "12xlarge": 2.793,
            "16xlarge": 3.724,
            "24xlarge": 5.586,
            "32xlarge": 7.448,
        },
        "r5": {
            "large": 0.182,
            "xlarge": 0.364,
            "2xlarge": 0.73,
            "4xlarge": 1.459,
            "8xlarge": 2.917,
            "12xlarge": 4.377,
            "16xlarge": 5.835,
            "24xlarge": 8.753,
        },
        "g4dn": {
            "xlarge": 0.921,
            "2xlarge": 1.317,
            "4xlarge": 2.109,
            "8xlarge": 3.811,
            "12xlarge": 6.863,
            "16xlarge": 7.622,
        },
        "g5": {
            "xlarge": 1.76,
            "2xlarge": 1.894,
            "4xlarge": 2.537,
            "8xlarge": 3.825,
            "12xlarge": 8.863,
            "16xlarge": 6.4,
            "24xlarge": 12.725,
            "48xlarge": 25.45,
        },
        "p3": {"2xlarge": 4.777, "8xlarge": 18.345, "16xlarge": 35.162},
    },
}
