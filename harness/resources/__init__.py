"""Resources: definitions (``define_resource``, ``@resource``), URI templates, and the
``resources`` service that lists and reads them."""

from .completions import Suggestions
from .contents import ResourceContents
from .define import ResourceDefinition, define_resource, resource
from .service import ResourcesService
from .template import UriTemplate

__all__ = [
    "ResourceContents",
    "ResourceDefinition",
    "ResourcesService",
    "Suggestions",
    "UriTemplate",
    "define_resource",
    "resource",
]
